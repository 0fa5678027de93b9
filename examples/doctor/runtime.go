package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Provider libraries ONNX Runtime loads from its own directory for CUDA.
const (
	providersShared = "libonnxruntime_providers_shared.so"
	providersCUDA   = "libonnxruntime_providers_cuda.so"
)

var soVersion = regexp.MustCompile(`libonnxruntime\.so\.(\d+\.\d+\.\d+)$`)

// runtimeVersion reads the library's version without loading it: from the
// npm package.json it ships in (onnxruntime-node), looked for above the path
// and above the file it resolves to, else from a versioned file name along
// its symlink chain (libonnxruntime.so.1.30.0). It returns "" when neither
// says.
func runtimeVersion(lib string) (version, how string) {
	dirs := []string{filepath.Dir(lib)}
	if real, err := filepath.EvalSymlinks(lib); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, dir := range dirs {
		if v, where := packageVersion(dir); v != "" {
			return v, where
		}
	}
	p := lib
	for range 16 {
		if m := soVersion.FindStringSubmatch(filepath.Base(p)); m != nil {
			return m[1], "file name " + filepath.Base(p)
		}
		target, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return "", ""
}

// packageVersion finds an onnxruntime* package.json in dir or up to five
// directories above it.
func packageVersion(dir string) (string, string) {
	for range 6 {
		data, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			var pkg struct{ Name, Version string }
			if json.Unmarshal(data, &pkg) == nil && strings.HasPrefix(pkg.Name, "onnxruntime") && pkg.Version != "" {
				return pkg.Version, filepath.Join(dir, "package.json")
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", ""
}

// cudaCauses lists why ONNX Runtime at lib cannot run the CUDA provider, as
// far as files tell without loading anything: provider libraries absent
// beside it, or libraries the CUDA provider needs that the dynamic loader
// will not find in search. Empty means the files are all there.
func cudaCauses(lib string, search []string) []string {
	dir := filepath.Dir(lib)
	var causes []string
	for _, name := range []string{providersShared, providersCUDA} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			causes = append(causes, fmt.Sprintf("%s is absent beside %s: this ONNX Runtime build has no CUDA provider (install a CUDA build of ONNX Runtime and point PRISM_ORT_LIB or -ort at it)", name, lib))
		}
	}
	if len(causes) > 0 {
		return causes
	}
	missing, err := missingDeps(filepath.Join(dir, providersCUDA), search)
	if err != nil {
		return []string{fmt.Sprintf("cannot read %s: %v", providersCUDA, err)}
	}
	for _, m := range missing {
		causes = append(causes, fmt.Sprintf("%s (needed by %s) is not on the library path: install the CUDA/cuDNN runtime that provides it or add its directory to LD_LIBRARY_PATH", m, providersCUDA))
	}
	return causes
}

// missingDeps returns the DT_NEEDED libraries of the ELF file at path that
// are in none of its RUNPATH/RPATH directories nor search.
func missingDeps(path string, search []string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				dirs = append(dirs, strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", filepath.Dir(path)), "$ORIGIN", filepath.Dir(path)))
			}
		}
	}
	dirs = append(dirs, filepath.Dir(path))
	dirs = append(dirs, search...)
	var missing []string
	for _, lib := range needed {
		if !findLib(lib, dirs) {
			missing = append(missing, lib)
		}
	}
	return missing, nil
}

func findLib(name string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return true
		}
	}
	return false
}

// libSearchPath is where the dynamic loader looks: LD_LIBRARY_PATH, the
// directories of /etc/ld.so.conf (with its includes), the usual system
// directories and the WSL driver directory.
func libSearchPath(getenv func(string) string) []string {
	var dirs []string
	if v := getenv("LD_LIBRARY_PATH"); v != "" {
		dirs = append(dirs, strings.Split(v, ":")...)
	}
	dirs = append(dirs, ldSoConf("/etc/ld.so.conf", 0)...)
	dirs = append(dirs, "/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
		"/usr/local/cuda/lib64", "/usr/lib/wsl/lib")
	return dirs
}

// ldSoConf reads the directories listed in an ld.so.conf file, following
// "include" globs a few levels deep.
func ldSoConf(path string, depth int) []string {
	if depth > 4 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "include "):
			pattern := strings.TrimSpace(strings.TrimPrefix(line, "include "))
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(path), pattern)
			}
			matches, _ := filepath.Glob(pattern)
			for _, m := range matches {
				dirs = append(dirs, ldSoConf(m, depth+1)...)
			}
		default:
			dirs = append(dirs, line)
		}
	}
	return dirs
}
