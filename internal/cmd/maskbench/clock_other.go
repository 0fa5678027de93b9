//go:build !linux

package main

import (
	"errors"
	"time"
)

func threadClock() (func() time.Duration, error) {
	return nil, errors.New("-clock cpu needs Linux")
}
