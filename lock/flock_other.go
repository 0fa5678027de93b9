//go:build !unix

package lock

import (
	"errors"
	"os"
)

// errUnsupported is returned where flock(2) does not exist.
var errUnsupported = errors.New("the model-load lock needs flock(2), which this operating system does not provide")

func tryLockFile(*os.File, bool) (bool, error) { return false, errUnsupported }

func unlockFile(*os.File) error { return errUnsupported }

func sameFile(*os.File, string) (bool, error) { return false, errUnsupported }

func processAlive(int) bool { return false }
