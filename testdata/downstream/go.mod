module example.com/forecast

go 1.26.0

require github.com/prism-local/prism v0.0.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/nikolalohinski/gonja/v2 v2.9.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	github.com/yalue/onnxruntime_go v1.27.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/prism-local/prism => ../..
