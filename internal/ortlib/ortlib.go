// Package ortlib knows which ONNX Runtime shared library Prism uses, where it
// comes from (the onnxruntime-node npm package) and how to find it on this
// machine: a path the caller names (an option, or PRISM_ORT_LIB read at the
// edge), else the cache that `go run ./internal/cmd/fetch ort` fills. It
// reads no environment.
package ortlib

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/prism-local/prism/internal/npmfetch"
)

// Version is the ONNX Runtime release Prism is built and tested against.
const Version = "1.30.0"

// Package is the npm package that ships the linux/x64 build of the library.
var Package = npmfetch.Package{Name: "onnxruntime-node", Version: Version}

// pathInPackage is where the library sits inside the unpacked package.
const pathInPackage = "package/bin/napi-v6/linux/x64/libonnxruntime.so.1"

// SHA256 is the checksum of libonnxruntime.so.1 in onnxruntime-node@1.30.0.
const SHA256 = "ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23"

// InstallCommand is the one command that installs the library into the cache.
const InstallCommand = "go run ./internal/cmd/fetch ort   (or: make ort)"

// ErrNotFound reports that no ONNX Runtime library could be found.
var ErrNotFound = errors.New("onnx runtime library not found")

// Source says where a library path came from.
type Source string

const (
	FromOption Source = "option"
	FromEnv    Source = "PRISM_ORT_LIB"
	FromCache  Source = "cache"
)

// Find returns the library path: path when non-empty, reported as coming
// from from, else the library in the cache under cacheRoot ("" for the
// default cache). A named path that does not exist is an error, never a
// silent step to the next source.
func Find(path string, from Source, cacheRoot string) (string, Source, error) {
	if path != "" {
		return checkFile(path, from)
	}
	root, err := npmfetch.CacheDir(cacheRoot)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w; install it with: %s", ErrNotFound, err, InstallCommand)
	}
	dir, ok := Package.Cached(root)
	if !ok {
		return "", "", fmt.Errorf("%w: no path given (option or PRISM_ORT_LIB) and %s is not in the cache %s; install it with: %s",
			ErrNotFound, Package, root, InstallCommand)
	}
	return checkFile(filepath.Join(dir, pathInPackage), FromCache)
}

func checkFile(path string, src Source) (string, Source, error) {
	st, err := os.Stat(path)
	if err != nil {
		// The *PathError would name path a second time.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", "", fmt.Errorf("%w: %s names %s: %w; install it with: %s", ErrNotFound, src, path, err, InstallCommand)
	}
	if st.IsDir() {
		return "", "", fmt.Errorf("%w: %s names %s, which is a directory, not the library file", ErrNotFound, src, path)
	}
	return path, src, nil
}

// InCache is where the library sits in the cache under cacheRoot, whether
// or not it is there.
func InCache(cacheRoot string) string {
	return filepath.Join(Package.Dir(cacheRoot), pathInPackage)
}

// Install fetches the library into the cache under cacheRoot ("" for the
// default cache; idempotent) and verifies its checksum. It returns the
// library path.
func Install(ctx context.Context, cacheRoot string) (string, error) {
	root, err := npmfetch.CacheDir(cacheRoot)
	if err != nil {
		return "", err
	}
	dir, err := npmfetch.Fetch(ctx, root, Package)
	if err != nil {
		return "", err
	}
	lib := filepath.Join(dir, pathInPackage)
	if err := npmfetch.VerifySHA256(lib, SHA256); err != nil {
		return "", fmt.Errorf("onnx runtime library in the cache is not the expected build (remove %s and fetch again): %w", dir, err)
	}
	return lib, nil
}
