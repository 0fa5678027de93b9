//go:build cgo

package resources

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// SystemNVML is the NVIDIA Management Library of this machine, loaded from
// libnvidia-ml.so.1 at Init. Without the library (no NVIDIA driver) Init
// fails with an error saying so; nothing panics.
func SystemNVML() NVML { return systemNVML{} }

// systemNVML uses go-nvml's process-wide instance, whose Init/Shutdown are
// reference-counted and serialised, so concurrent readers are safe.
type systemNVML struct{}

func nvmlErr(what string, ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return errors.New("libnvidia-ml.so.1 not found: no NVIDIA driver is installed (under WSL, /usr/lib/wsl/lib must be on the library path)")
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return errors.New("the NVIDIA kernel driver is not loaded")
	case nvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("%s: no permission to talk to the NVIDIA driver", what)
	}
	return fmt.Errorf("%s: %s", what, ret.Error())
}

func (systemNVML) Init() error     { return nvmlErr("nvml init", nvml.Init()) }
func (systemNVML) Shutdown() error { return nvmlErr("nvml shutdown", nvml.Shutdown()) }

func (systemNVML) DriverVersion() (string, error) {
	v, ret := nvml.SystemGetDriverVersion()
	return v, nvmlErr("driver version", ret)
}

func (systemNVML) DeviceCount() (int, error) {
	n, ret := nvml.DeviceGetCount()
	return n, nvmlErr("device count", ret)
}

func device(i int) (nvml.Device, error) {
	d, ret := nvml.DeviceGetHandleByIndex(i)
	return d, nvmlErr(fmt.Sprintf("device %d", i), ret)
}

func (systemNVML) DeviceName(i int) (string, error) {
	d, err := device(i)
	if err != nil {
		return "", err
	}
	name, ret := d.GetName()
	return name, nvmlErr("name", ret)
}

func (systemNVML) DeviceMemory(i int) (total, used, free uint64, err error) {
	d, err := device(i)
	if err != nil {
		return 0, 0, 0, err
	}
	m, ret := d.GetMemoryInfo()
	if err := nvmlErr("memory", ret); err != nil {
		return 0, 0, 0, err
	}
	return m.Total, m.Used, m.Free, nil
}

func (systemNVML) DeviceUtilization(i int) (uint32, error) {
	d, err := device(i)
	if err != nil {
		return 0, err
	}
	u, ret := d.GetUtilizationRates()
	return u.Gpu, nvmlErr("utilisation", ret)
}

func (systemNVML) DeviceTemperature(i int) (uint32, error) {
	d, err := device(i)
	if err != nil {
		return 0, err
	}
	c, ret := d.GetTemperature(nvml.TEMPERATURE_GPU)
	return c, nvmlErr("temperature", ret)
}
