package modelfolder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/prism-local/prism/errcode"
)

// Files of a model folder, relative to it.
const (
	// GenAIConfigFile is onnxruntime-genai's config; when present it names
	// the decoder graph and the folder is in the genai layout.
	GenAIConfigFile = "genai_config.json"
	// ConfigFile is the Hugging Face model config.
	ConfigFile = "config.json"
	// GenerationConfigFile holds the Hugging Face generation defaults.
	GenerationConfigFile = "generation_config.json"
	// TokenizerFile is the Hugging Face tokenizer.
	TokenizerFile = "tokenizer.json"
	// TokenizerConfigFile holds the special tokens and, in older exports,
	// the chat template.
	TokenizerConfigFile = "tokenizer_config.json"
	// ChatTemplateFile is the default chat template as its own file.
	ChatTemplateFile = "chat_template.jinja"
	// ChatTemplatesDir holds further named templates, one <name>.jinja each.
	ChatTemplatesDir = "additional_chat_templates"
	// GraphDir is the subfolder optimum / transformers.js exports keep their
	// graphs in.
	GraphDir = "onnx"
	// DemoMarkerFile marks Prism's built-in demo model (mkmodel -demo): a
	// scripted graph, not a real model, which the server says to its users.
	DemoMarkerFile = "prism-demo-model.txt"
)

// IsDemo reports whether dir holds Prism's built-in demo model.
func IsDemo(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, DemoMarkerFile))
	return err == nil
}

// Layout names the folder layouts Prism reads.
type Layout string

const (
	// LayoutGenAI is the onnxruntime-genai model builder's folder:
	// genai_config.json beside the decoder graph it names.
	LayoutGenAI Layout = "genai"
	// LayoutOptimum is the Hugging Face optimum / transformers.js export:
	// config.json (+ generation_config.json) and the graphs under onnx/ (or
	// beside config.json).
	LayoutOptimum Layout = "optimum"
	// LayoutUnknown is a folder with neither config.
	LayoutUnknown Layout = ""
)

// Folder is a model folder whose layout has been read. Reading it stats a
// few names; files are opened only when asked for.
type Folder struct {
	// Dir is the folder as given.
	Dir string
	// Layout is the folder's layout: genai_config.json wins when both
	// configs are present, as onnxruntime-genai itself only reads that file.
	Layout Layout

	// fsys, when set, is the folder (ReadFS); Dir is then "." and every
	// path is relative to it.
	fsys fs.FS
}

// Read looks at the folder dir. It fails only when dir is not a folder; a
// folder without any model file is LayoutUnknown, so a tokenizer-only folder
// can be read too.
func Read(dir string) (*Folder, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, &MissingFileError{Path: dir, Why: "the model folder"}
	}
	if !st.IsDir() {
		return nil, &ConfigError{File: dir, Err: errors.New("is a file; a model is a folder holding the graph and its config")}
	}
	f := &Folder{Dir: dir}
	f.readLayout()
	return f, nil
}

// ReadFS reads a model folder held in fsys (its root), with the same rules
// as Read. It is how a folder that is not on disk yet — a hub repository's
// file listing, before the download — is asked which files a load reads:
// names are enough, except genai_config.json, whose decoder filename is
// read. Paths the Folder returns are relative to the root.
func ReadFS(fsys fs.FS) *Folder {
	f := &Folder{Dir: ".", fsys: fsys}
	f.readLayout()
	return f
}

func (f *Folder) readLayout() {
	switch {
	case f.Has(GenAIConfigFile):
		f.Layout = LayoutGenAI
	case f.Has(ConfigFile):
		f.Layout = LayoutOptimum
	}
}

// Path is the path of name (one of the File constants) in the folder.
func (f *Folder) Path(name string) string { return filepath.Join(f.Dir, name) }

// Has reports whether the folder holds the file name.
func (f *Folder) Has(name string) bool { return f.isFile(f.Path(name)) }

// ReadOptional reads the file name. A missing file gives nil data and no
// error; any other failure is a *ConfigError naming the file.
func (f *Folder) ReadOptional(name string) ([]byte, error) {
	data, err := f.readFile(f.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &ConfigError{File: f.Path(name), Err: err}
	}
	return data, nil
}

// ReadRequired reads the file name; a missing one is a *MissingFileError
// saying what it is for.
func (f *Folder) ReadRequired(name, why string) ([]byte, error) {
	data, err := f.ReadOptional(name)
	if err == nil && data == nil && !f.Has(name) {
		return nil, &MissingFileError{Path: f.Path(name), Why: why}
	}
	return data, err
}

// isFile follows symlinks: a Hugging Face hub snapshot is a folder of
// symlinks to the blobs of the cache.
func (f *Folder) isFile(p string) bool {
	var st fs.FileInfo
	var err error
	if f.fsys != nil {
		st, err = fs.Stat(f.fsys, filepath.ToSlash(p))
	} else {
		st, err = os.Stat(p)
	}
	return err == nil && st.Mode().IsRegular()
}

// readDir and readFile are os.ReadDir and os.ReadFile, or their fs.FS
// forms for a folder from ReadFS.
func (f *Folder) readDir(dir string) ([]fs.DirEntry, error) {
	if f.fsys != nil {
		return fs.ReadDir(f.fsys, filepath.ToSlash(dir))
	}
	return os.ReadDir(dir)
}

func (f *Folder) readFile(p string) ([]byte, error) {
	if f.fsys != nil {
		return fs.ReadFile(f.fsys, filepath.ToSlash(p))
	}
	return os.ReadFile(p)
}

// ConfigError says which file and field of a model folder could not be read.
type ConfigError struct {
	File  string // path of the file
	Field string // JSON path of the field, "" when the file as a whole is bad
	Err   error
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("model config %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("model config %s: field %s: %v", e.File, e.Field, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Code returns "model_load_failed".
func (e *ConfigError) Code() string { return errcode.ModelLoadFailed }

// MissingFileError names a file a model folder must have but does not.
type MissingFileError struct {
	Path string
	Why  string // what the file is for
}

func (e *MissingFileError) Error() string {
	return fmt.Sprintf("model file %s not found (%s)", e.Path, e.Why)
}

func (e *MissingFileError) Unwrap() error { return os.ErrNotExist }

// Code returns "model_load_failed".
func (e *MissingFileError) Code() string { return errcode.ModelLoadFailed }
