package lock_test

import (
	"context"
	"fmt"
	"os"

	"github.com/prism-local/prism/lock"
)

// Take the machine-wide load lock only around checking and loading; give it
// back before generating.
func ExampleLock_Acquire() {
	dir, _ := os.MkdirTemp("", "prism-lock-example")
	defer os.RemoveAll(dir)

	lk, err := lock.New(lock.WithDir(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	held, err := lk.Acquire(context.Background(), "qwen2.5-0.5b")
	if err != nil {
		fmt.Println(err) // a *lock.TimeoutError names the holder's pid and model
		return
	}
	h, _, _ := lk.Holder()
	fmt.Println("holder model:", h.Model)
	// ... check the resource budget and load the model here ...
	held.Release()

	_, busy, _ := lk.Holder()
	fmt.Println("held after release:", busy)
	// Output:
	// holder model: qwen2.5-0.5b
	// held after release: false
}

// After a load, mark the model resident so a process refused for lack of
// memory can name this one; close the mark at unload.
func ExampleLock_MarkResident() {
	dir, _ := os.MkdirTemp("", "prism-lock-example")
	defer os.RemoveAll(dir)
	lk, _ := lock.New(lock.WithDir(dir))

	mark, err := lk.MarkResident("qwen2.5-0.5b")
	if err != nil {
		fmt.Println(err)
		return
	}
	rs, _ := lk.Residents()
	fmt.Println(len(rs), rs[0].Model)
	fmt.Println("another process holds memory:", lk.OtherHolder() != nil) // this process does not count
	mark.Close()
	// Output:
	// 1 qwen2.5-0.5b
	// another process holds memory: false
}
