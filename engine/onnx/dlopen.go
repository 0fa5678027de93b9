//go:build cgo && unix

package onnx

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static const char *prism_try_dlopen(const char *path) {
	void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		return dlerror();
	}
	dlclose(h);
	return NULL;
}
*/
import "C"

import "unsafe"

// dlopenError tries to load the shared library at path and returns the
// loader's message when it cannot, "" when it can.
func dlopenError(path string) string {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.prism_try_dlopen(cpath); msg != nil {
		return C.GoString(msg)
	}
	return ""
}
