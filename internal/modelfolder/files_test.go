package modelfolder

import (
	"slices"
	"testing"
	"testing/fstest"
)

// A listing read through ReadFS chooses exactly what the same folder on
// disk chooses, and LoadFiles names the files a load of it reads, data
// before the graph and the configs last.
func TestReadFSMatchesDisk(t *testing.T) {
	files := allVariants()
	files[TokenizerFile] = "{}"
	files[TokenizerConfigFile] = "{}"
	files[GenerationConfigFile] = "{}"
	files[ChatTemplatesDir+"/tool_use.jinja"] = "t"
	files["README.md"] = "r"
	files["onnx/decoder_model.onnx"] = "g"
	genai := map[string]string{GenAIConfigFile: `{"model":{"decoder":{"filename":"m.onnx"}}}`, "m.onnx": "g", "m.onnx.data": "d", TokenizerFile: "{}"}
	cases := []struct {
		name    string
		files   map[string]string
		variant string
		want    []string
	}{
		{"q4", files, "q4", []string{"onnx/model_q4.onnx_data", ChatTemplatesDir + "/tool_use.jinja", TokenizerFile, TokenizerConfigFile, "onnx/model_q4.onnx", GenerationConfigFile, ConfigFile}},
		{"fp32 shards", files, "", []string{"onnx/model.onnx_data", "onnx/model.onnx_data_1", "onnx/model.onnx_data_2", ChatTemplatesDir + "/tool_use.jinja", TokenizerFile, TokenizerConfigFile, "onnx/model.onnx", GenerationConfigFile, ConfigFile}},
		{"genai", genai, "", []string{"m.onnx.data", TokenizerFile, "m.onnx", GenAIConfigFile}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mfs := fstest.MapFS{}
			for name, body := range tc.files {
				mfs[name] = &fstest.MapFile{Data: []byte(body)}
			}
			listed := ReadFS(mfs)
			c, err := listed.Choose(tc.variant, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			if got := listed.LoadFiles(c); !slices.Equal(got, tc.want) {
				t.Fatalf("listing: %q\nwant        %q", got, tc.want)
			}
			disk, err := Read(writeFiles(t, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			dc, err := disk.Choose(tc.variant, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			if got := disk.LoadFiles(dc); !slices.Equal(got, tc.want) {
				t.Fatalf("disk: %q\nwant     %q", got, tc.want)
			}
			if listed.Layout != disk.Layout || !slices.Equal(c.Present, dc.Present) {
				t.Fatalf("listing %s %v, disk %s %v", listed.Layout, c.Present, disk.Layout, dc.Present)
			}
		})
	}
}
