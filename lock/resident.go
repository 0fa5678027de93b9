package lock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resident files are named resident-<pid>-<random>.json; the owner holds an
// exclusive flock on the file for as long as its model stays in memory.
const (
	residentPrefix = "resident-"
	residentSuffix = ".json"
)

// Resident marks that this process keeps a model in memory. Other processes
// see it through Residents until Close, or until this process dies.
type Resident struct {
	f      *os.File
	path   string
	holder Holder
	once   sync.Once
	err    error
}

// Holder is the record other processes see.
func (r *Resident) Holder() Holder { return r.holder }

// Close removes the mark. It is idempotent.
func (r *Resident) Close() error {
	r.once.Do(func() {
		var errs []error
		if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		if err := r.f.Close(); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			r.err = fmt.Errorf("lock: removing resident mark %s: %w", r.path, errors.Join(errs...))
		}
	})
	return r.err
}

// MarkResident records that this process now keeps model in memory, so that
// a process refused for lack of memory can name it (spec P1, P12). Call it
// after a successful load and Close it at unload. The mark is flocked, so
// it stops counting the moment this process dies.
func (l *Lock) MarkResident(model string) (*Resident, error) {
	f, err := l.createInDir(func() (*os.File, error) { return os.CreateTemp(l.dir, ".tmp-resident-*") })
	if err != nil {
		return nil, fmt.Errorf("lock: creating resident mark: %w", err)
	}
	fail := func(err error) (*Resident, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock: creating resident mark: %w", err)
	}
	ok, err := tryLockFile(f, true)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(errors.New("new file is locked by someone else"))
	}
	h := Holder{PID: l.pid, Model: model, Since: time.Now().UTC()}
	data, err := json.Marshal(h)
	if err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	// The random part of the temporary name keeps the final name unique, so
	// a reader removing a stale mark can never remove a live one.
	unique := strings.TrimPrefix(filepath.Base(f.Name()), ".tmp-resident-")
	final := filepath.Join(l.dir, residentPrefix+strconv.Itoa(l.pid)+"-"+unique+residentSuffix)
	if err := os.Rename(f.Name(), final); err != nil {
		return fail(err)
	}
	return &Resident{f: f, path: final, holder: h}, nil
}

// Residents lists the processes that keep a model in memory now, oldest
// first. Marks left by dead processes are skipped and removed.
func (l *Lock) Residents() ([]Holder, error) {
	names, err := filepath.Glob(filepath.Join(l.dir, residentPrefix+"*"+residentSuffix))
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, name := range names {
		h, live, err := readResident(name)
		if err != nil || !live {
			continue
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out, nil
}

// readResident reads one mark, reporting live only while its owner still
// holds the flock. A mark whose owner is gone is removed.
func readResident(name string) (Holder, bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return Holder{}, false, err
	}
	defer f.Close()
	free, err := tryLockFile(f, false)
	if err != nil {
		return Holder{}, false, err
	}
	if free {
		os.Remove(name)
		unlockFile(f)
		return Holder{}, false, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return Holder{}, false, err
	}
	h, err := decodeHolder(data)
	if err != nil {
		return Holder{}, false, err
	}
	return h, true, nil
}

// OtherHolder names a process other than this one that holds memory for a
// model or holds the load lock: the oldest live resident first, then the
// lock holder. It returns nil when there is none. resources uses it to say
// which Prism process holds the memory a refused load needed.
func (l *Lock) OtherHolder() *Holder {
	if rs, err := l.Residents(); err == nil {
		for _, r := range rs {
			if r.PID != l.pid {
				return &r
			}
		}
	}
	if h, held, err := l.Holder(); err == nil && held && h != nil && h.PID != l.pid {
		return h
	}
	return nil
}
