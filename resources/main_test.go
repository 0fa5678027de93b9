package resources_test

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/prism-local/prism/lock"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("PRISM_RESOURCES_RESIDENT_DIR"); dir != "" {
		os.Exit(residentHelper(dir, os.Getenv("PRISM_RESOURCES_RESIDENT_MODEL")))
	}
	os.Exit(m.Run())
}

// residentHelper is a second Prism-like process: it marks a model resident
// in dir, says "ready" and keeps the mark until its stdin closes.
func residentHelper(dir, model string) int {
	lk, err := lock.New(lock.WithDir(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	mark, err := lk.MarkResident(model)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer mark.Close()
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return 0
}
