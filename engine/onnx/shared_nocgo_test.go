//go:build !cgo

package onnx

var sharedDir string
