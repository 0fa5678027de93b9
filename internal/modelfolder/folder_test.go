package modelfolder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// allVariants is an onnx-community export with every dtype variant, each
// with its external data, the fp32 one split in three.
func allVariants() map[string]string {
	files := map[string]string{ConfigFile: "{}"}
	for _, v := range Variants() {
		g := "onnx/" + GraphFileName(FormModel, v)
		files[g] = "g"
		files[g+"_data"] = "d"
	}
	files["onnx/model.onnx_data_1"] = "d"
	files["onnx/model.onnx_data_2"] = "d"
	return files
}

func TestChoose(t *testing.T) {
	cases := []struct {
		name      string
		files     map[string]string
		variant   string
		device    string
		graph     string   // relative path of the graph chosen
		data      []string // relative paths of its data files
		present   []string
		notPicked []string
		form      Form
	}{
		{"genai", map[string]string{GenAIConfigFile: `{"model":{"decoder":{"filename":"model.onnx"}}}`, "model.onnx": "g", "model.onnx.data": "d", "other.onnx.data": "x"},
			"", "cpu", "model.onnx", []string{"model.onnx.data"}, nil, nil, FormModel},
		{"optimum fp32 only", map[string]string{ConfigFile: "{}", "onnx/model.onnx": "g", "onnx/model.onnx_data": "d"},
			"", "cpu", "onnx/model.onnx", []string{"onnx/model.onnx_data"}, []string{"fp32"}, nil, FormModel},
		{"only q4", map[string]string{ConfigFile: "{}", "onnx/model_q4.onnx": "g", "onnx/model_q4.onnx_data": "d"},
			"", "cpu", "onnx/model_q4.onnx", []string{"onnx/model_q4.onnx_data"}, []string{"q4"}, nil, FormModel},
		{"all on cpu", allVariants(), "", "cpu", "onnx/model.onnx",
			[]string{"onnx/model.onnx_data", "onnx/model.onnx_data_1", "onnx/model.onnx_data_2"},
			[]string{"fp32", "q8", "int8", "uint8", "q4", "bnb4", "q4f16", "fp16"},
			[]string{"q8", "int8", "uint8", "q4", "bnb4", "q4f16", "fp16"}, FormModel},
		{"all on auto", allVariants(), "", "auto", "onnx/model.onnx",
			[]string{"onnx/model.onnx_data", "onnx/model.onnx_data_1", "onnx/model.onnx_data_2"},
			[]string{"fp32", "q8", "int8", "uint8", "q4", "bnb4", "q4f16", "fp16"}, nil, FormModel},
		{"all on cuda", allVariants(), "", "cuda", "onnx/model_fp16.onnx", []string{"onnx/model_fp16.onnx_data"},
			[]string{"fp16", "fp32", "q4f16", "q4", "bnb4", "q8", "int8", "uint8"}, nil, FormModel},
		{"named q8", allVariants(), "q8", "cpu", "onnx/model_quantized.onnx", []string{"onnx/model_quantized.onnx_data"}, nil, nil, FormModel},
		{"named q4f16", allVariants(), "q4f16", "cpu", "onnx/model_q4f16.onnx", []string{"onnx/model_q4f16.onnx_data"}, nil, nil, FormModel},
		{"quantized on cpu", map[string]string{ConfigFile: "{}", "onnx/model_q4.onnx": "g", "onnx/model_quantized.onnx": "g", "onnx/model_fp16.onnx": "g"},
			"", "cpu", "onnx/model_quantized.onnx", nil, []string{"q8", "q4", "fp16"}, []string{"q4", "fp16"}, FormModel},
		{"root model.onnx", map[string]string{ConfigFile: "{}", "model.onnx": "g", "model.onnx_data": "d"},
			"", "cpu", "model.onnx", []string{"model.onnx_data"}, []string{"fp32"}, nil, FormModel},
		{"no config, root graph", map[string]string{"model.onnx": "g"}, "", "", "model.onnx", nil, []string{"fp32"}, nil, FormModel},
		{"lone graph of its own name", map[string]string{ConfigFile: "{}", "onnx/decoder.onnx": "g", "onnx/decoder.onnx_data": "d"},
			"", "cpu", "onnx/decoder.onnx", []string{"onnx/decoder.onnx_data"}, nil, nil, FormModel},
		{"merged", map[string]string{ConfigFile: "{}", "onnx/decoder_model_merged.onnx": "g", "onnx/decoder_model_merged_quantized.onnx": "g",
			"onnx/decoder_model.onnx": "g", "onnx/decoder_with_past_model.onnx": "g"},
			"", "cpu", "onnx/decoder_model_merged.onnx", nil, []string{"fp32", "q8"}, []string{"q8"}, FormMerged},
		{"merged q4 named", map[string]string{ConfigFile: "{}", "onnx/decoder_model_merged.onnx": "g", "onnx/decoder_model_merged_q4.onnx": "g"},
			"q4", "cpu", "onnx/decoder_model_merged_q4.onnx", nil, nil, nil, FormMerged},
		{"model wins over merged", map[string]string{ConfigFile: "{}", "onnx/decoder_model_merged.onnx": "g", "onnx/model_q4.onnx": "g"},
			"", "cpu", "onnx/model_q4.onnx", nil, []string{"q4"}, nil, FormModel},
		{"onnx/ wins over the root", map[string]string{ConfigFile: "{}", "model.onnx": "g", "onnx/model_fp16.onnx": "g"},
			"", "cpu", "onnx/model_fp16.onnx", nil, []string{"fp16"}, nil, FormModel},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			f, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Choose(c.variant, c.device)
			if err != nil {
				t.Fatal(err)
			}
			rel := func(p string) string { r, _ := filepath.Rel(dir, p); return filepath.ToSlash(r) }
			var data []string
			for _, d := range got.Data {
				data = append(data, rel(d))
			}
			if rel(got.Path) != c.graph || !slices.Equal(data, c.data) || got.Form != c.form {
				t.Fatalf("graph %s data %v form %s, want %s %v %s", rel(got.Path), data, got.Form, c.graph, c.data, c.form)
			}
			if c.present != nil && !slices.Equal(got.Present, c.present) {
				t.Fatalf("present %v, want %v", got.Present, c.present)
			}
			if c.notPicked != nil && !slices.Equal(got.NotPicked(), c.notPicked) {
				t.Fatalf("not picked %v, want %v", got.NotPicked(), c.notPicked)
			}
			if got.Requested != (c.variant != "") {
				t.Fatalf("requested %v", got.Requested)
			}
			if files := got.Files(); files[0] != got.Path || len(files) != 1+len(got.Data) {
				t.Fatalf("files %v", files)
			}
		})
	}
}

func TestChooseErrors(t *testing.T) {
	split := map[string]string{ConfigFile: "{}", "onnx/decoder_model.onnx": "g", "onnx/decoder_with_past_model.onnx": "g",
		"onnx/decoder_model_quantized.onnx": "g"}
	t.Run("split decoder", func(t *testing.T) {
		f, _ := Read(writeFiles(t, split))
		_, err := f.Choose("", "cpu")
		var se *SplitDecoderError
		if !errors.As(err, &se) || !slices.Equal(se.Files, []string{"onnx/decoder_model.onnx", "onnx/decoder_with_past_model.onnx"}) {
			t.Fatalf("err %v", err)
		}
		for _, want := range []string{"decoder_model.onnx and onnx/decoder_with_past_model.onnx", "optimum-cli export onnx", "text-generation-with-past", "onnx/model.onnx"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
	})
	t.Run("named variant missing", func(t *testing.T) {
		f, _ := Read(writeFiles(t, map[string]string{ConfigFile: "{}", "onnx/model.onnx": "g", "onnx/model_q4.onnx": "g"}))
		_, err := f.Choose("fp16", "cpu")
		var ve *VariantError
		if !errors.As(err, &ve) || ve.Want != "fp16" || !slices.Equal(ve.Present, []string{"fp32", "q4"}) {
			t.Fatalf("err %v", err)
		}
		if !strings.Contains(err.Error(), "it holds fp32, q4") {
			t.Fatalf("message %q", err)
		}
	})
	t.Run("unknown variant", func(t *testing.T) {
		f, _ := Read(writeFiles(t, map[string]string{ConfigFile: "{}", "onnx/model_q4.onnx": "g"}))
		_, err := f.Choose("int4", "cpu")
		var ve *VariantError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "want one of fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4") ||
			!strings.Contains(err.Error(), "holds q4") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("variant of a genai folder", func(t *testing.T) {
		f, _ := Read(writeFiles(t, map[string]string{GenAIConfigFile: `{"model":{"decoder":{"filename":"m.onnx"}}}`, "m.onnx": "g"}))
		_, err := f.Choose("q4", "cpu")
		var ve *VariantError
		if !errors.As(err, &ve) || len(ve.Present) != 0 {
			t.Fatalf("err %v", err)
		}
	})
	missing := []struct {
		name  string
		files map[string]string
		path  string // base of the path named
	}{
		{"no graph", map[string]string{ConfigFile: "{}"}, "model.onnx"},
		{"genai graph gone", map[string]string{GenAIConfigFile: `{"model":{"decoder":{"filename":"d.onnx"}}}`}, "d.onnx"},
	}
	for _, c := range missing {
		t.Run(c.name, func(t *testing.T) {
			f, _ := Read(writeFiles(t, c.files))
			_, err := f.Choose("", "cpu")
			var me *MissingFileError
			if !errors.As(err, &me) || filepath.Base(me.Path) != c.path || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("err %v", err)
			}
		})
	}
	bad := []struct{ name, genai, field string }{
		{"not json", `{`, ""},
		{"no model", `{}`, "model"},
		{"no decoder", `{"model":{}}`, "model.decoder"},
		{"no filename", `{"model":{"decoder":{}}}`, "model.decoder.filename"},
		{"filename a number", `{"model":{"decoder":{"filename":3}}}`, "model.decoder.filename"},
		{"escaping", `{"model":{"decoder":{"filename":"../m.onnx"}}}`, "model.decoder.filename"},
		{"absolute", `{"model":{"decoder":{"filename":"/m.onnx"}}}`, "model.decoder.filename"},
		{"parent", `{"model":{"decoder":{"filename":".."}}}`, "model.decoder.filename"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			f, _ := Read(writeFiles(t, map[string]string{GenAIConfigFile: c.genai}))
			_, err := f.Choose("", "cpu")
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field || filepath.Base(ce.File) != GenAIConfigFile {
				t.Fatalf("err %v", err)
			}
		})
	}
	t.Run("several unnamed graphs", func(t *testing.T) {
		f, _ := Read(writeFiles(t, map[string]string{ConfigFile: "{}", "onnx/a.onnx": "g", "onnx/b.onnx": "g"}))
		_, err := f.Choose("", "cpu")
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "a.onnx, b.onnx") {
			t.Fatalf("err %v", err)
		}
	})
}

func TestRead(t *testing.T) {
	dir := writeFiles(t, map[string]string{GenAIConfigFile: "{}", ConfigFile: "{}", "file": ""})
	f, err := Read(dir)
	if err != nil || f.Layout != LayoutGenAI {
		t.Fatalf("layout %v, %v", f, err)
	}
	if _, err := Read(filepath.Join(dir, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing folder: %v", err)
	}
	var ce *ConfigError
	if _, err := Read(filepath.Join(dir, "file")); !errors.As(err, &ce) {
		t.Fatalf("a file: %v", err)
	}
	if b, err := f.ReadOptional(GenerationConfigFile); b != nil || err != nil {
		t.Fatalf("absent optional file: %q %v", b, err)
	}
	var me *MissingFileError
	if _, err := f.ReadRequired(TokenizerFile, "the tokenizer"); !errors.As(err, &me) || !strings.Contains(err.Error(), "the tokenizer") {
		t.Fatalf("absent required file: %v", err)
	}
	empty, _ := Read(t.TempDir())
	if empty.Layout != LayoutUnknown {
		t.Fatalf("empty folder layout %q", empty.Layout)
	}
}

func TestIsDataName(t *testing.T) {
	for _, c := range []struct {
		graph, name string
		want        bool
	}{
		{"model.onnx", "model.onnx.data", true},
		{"model.onnx", "model.onnx_data", true},
		{"model.onnx", "model.onnx_data_1", true},
		{"model.onnx", "model.onnx_data_12", true},
		{"model.onnx", "model.onnx_data_", false},
		{"model.onnx", "model.onnx_data_x", false},
		{"model.onnx", "model.onnx_data.tmp", false},
		{"model.onnx", "model_q4.onnx_data", false},
		{"model_q4.onnx", "model_q4.onnx_data", true},
		{"model_q4.onnx", "model_q4f16.onnx_data", false},
		{"model.onnx", "model.onnx", false},
	} {
		if got := isDataName(c.graph, c.name); got != c.want {
			t.Errorf("isDataName(%q, %q) = %v", c.graph, c.name, got)
		}
	}
}

func TestGraphFileNames(t *testing.T) {
	for _, v := range Variants() {
		for _, form := range []Form{FormModel, FormMerged} {
			name := GraphFileName(form, v)
			gotForm, gotV, ok := parseGraphName(name)
			if !ok || gotForm != form || gotV != v {
				t.Errorf("%s %s: %q parses as %s %s %v", form, v, name, gotForm, gotV, ok)
			}
		}
	}
	if GraphFileName(FormModel, "q8") != "model_quantized.onnx" || GraphFileName(FormModel, "int4") != "" {
		t.Fatal("names")
	}
}

func FuzzChooseNames(f *testing.F) {
	f.Add("model.onnx", "model.onnx_data_1", "q4")
	f.Add("decoder_model_merged_q4f16.onnx", "decoder_model_merged_q4f16.onnx_data", "")
	f.Add("model_.onnx", "model_.onnx.data_", "fp32")
	f.Fuzz(func(t *testing.T, graph, data, variant string) {
		if form, v, ok := parseGraphName(graph); ok && GraphFileName(form, v) != graph {
			t.Fatalf("%q parses as %s %s, which is named %q", graph, form, v, GraphFileName(form, v))
		}
		if isDataName(graph, data) && !strings.HasPrefix(data, graph) {
			t.Fatalf("%q taken as data of %q", data, graph)
		}
		if KnownVariant(variant) != (GraphFileName(FormModel, variant) != "") {
			t.Fatalf("variant %q", variant)
		}
	})
}

func FuzzDecoderFilename(f *testing.F) {
	f.Add([]byte(`{"model":{"decoder":{"filename":"model.onnx"}}}`))
	f.Add([]byte(`{"model":{"decoder":{"filename":"sub/../../x"}}}`))
	f.Add([]byte(`{"model":{"decoder":{"filename":null}}}`))
	f.Add([]byte(`{"model":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		name, err := DecoderFilename("genai_config.json", data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %T %v", err, err)
			}
			return
		}
		if !filepath.IsLocal(name) {
			t.Fatalf("accepted %q", name)
		}
	})
}

// A Hugging Face hub snapshot is a folder of symlinks into the cache's
// blobs; its graphs, data files and templates are found through them.
func TestSymlinkedSnapshot(t *testing.T) {
	blobs := writeFiles(t, map[string]string{"cfg": "{}", "g": "g", "d": "d", "tpl": "{{ messages }}"})
	snap := t.TempDir()
	for link, blob := range map[string]string{
		ConfigFile: "cfg", "onnx/model_q4.onnx": "g", "onnx/model_q4.onnx_data": "d",
		ChatTemplatesDir + "/tool_use.jinja": "tpl",
	} {
		p := filepath.Join(snap, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(blobs, blob), p); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Read(snap)
	if err != nil || f.Layout != LayoutOptimum {
		t.Fatalf("Read = %+v, %v", f, err)
	}
	graphs, err := f.Graphs()
	if err != nil || len(graphs) != 1 || graphs[0].Variant != "q4" || len(graphs[0].Data) != 1 {
		t.Fatalf("Graphs = %+v, %v", graphs, err)
	}
}
