//go:build !cgo

package resources

import "errors"

// errNoCgo is why a cgo-less build has no GPU telemetry.
var errNoCgo = errors.New("built without cgo")

// SystemNVML would be the machine's NVIDIA Management Library, but this
// binary was built without cgo, so Init always fails with "built without
// cgo" and ReadGPUs reports "gpu telemetry unavailable: built without cgo".
func SystemNVML() NVML { return noNVML{} }

type noNVML struct{}

func (noNVML) Init() error                                      { return errNoCgo }
func (noNVML) Shutdown() error                                  { return nil }
func (noNVML) DriverVersion() (string, error)                   { return "", errNoCgo }
func (noNVML) DeviceCount() (int, error)                        { return 0, errNoCgo }
func (noNVML) DeviceName(int) (string, error)                   { return "", errNoCgo }
func (noNVML) DeviceMemory(int) (uint64, uint64, uint64, error) { return 0, 0, 0, errNoCgo }
func (noNVML) DeviceUtilization(int) (uint32, error)            { return 0, errNoCgo }
func (noNVML) DeviceTemperature(int) (uint32, error)            { return 0, errNoCgo }
