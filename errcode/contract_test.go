package errcode_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sourceDirs maps each folder of the module's non-test Go code to its file
// names, so the contract tests below see every package, whatever its build
// tags.
func sourceDirs(t *testing.T) map[string][]string {
	t.Helper()
	dirs := map[string][]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != ".." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found Go code in %d folders only; is the test running inside the module?", len(dirs))
	}
	return dirs
}

func parseFile(t *testing.T, fset *token.FileSet, path string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// receiver returns the name of a method's receiver type, without the star.
func receiver(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	x := fd.Recv.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if ix, ok := x.(*ast.IndexExpr); ok {
		x = ix.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestEveryErrorTypeHasCode holds the error contract: an exported type with
// an Error() string method also has Code() string, so errcode.Of reads a
// code from every error a Prism package can return.
func TestEveryErrorTypeHasCode(t *testing.T) {
	fset := token.NewFileSet()
	for dir, files := range sourceDirs(t) {
		errorTypes, coded := map[string]bool{}, map[string]bool{}
		for _, name := range files {
			for _, decl := range parseFile(t, fset, filepath.Join(dir, name)).Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Type.Params.NumFields() != 0 || fd.Type.Results.NumFields() != 1 {
					continue
				}
				if res, ok := fd.Type.Results.List[0].Type.(*ast.Ident); !ok || res.Name != "string" {
					continue
				}
				switch fd.Name.Name {
				case "Error":
					errorTypes[receiver(fd)] = true
				case "Code":
					coded[receiver(fd)] = true
				}
			}
		}
		for typ := range errorTypes {
			if ast.IsExported(typ) && !coded[typ] {
				t.Errorf("%s: error type %s has no Code() string method", dir, typ)
			}
		}
	}
}

// TestSameAPIUnderEveryBuild holds that a package exports the same
// identifiers, signatures and struct fields with and without cgo, and on a
// system that is not unix: only the cgo and system-specific work sits
// behind build tags, so code written against one build compiles against
// the others.
func TestSameAPIUnderEveryBuild(t *testing.T) {
	linux := build.Default
	linux.GOOS, linux.CgoEnabled = "linux", true
	noCgo := linux
	noCgo.CgoEnabled = false
	windows := noCgo
	windows.GOOS = "windows"
	builds := []struct {
		name string
		ctx  *build.Context
	}{{"without cgo", &noCgo}, {"on windows", &windows}}
	for dir, files := range sourceDirs(t) {
		want := exportedAPI(t, &linux, dir, files)
		for _, b := range builds {
			got := exportedAPI(t, b.ctx, dir, files)
			for _, line := range want {
				if !slices.Contains(got, line) {
					t.Errorf("%s: missing %s: %s", dir, b.name, line)
				}
			}
			for _, line := range got {
				if !slices.Contains(want, line) {
					t.Errorf("%s: only %s: %s", dir, b.name, line)
				}
			}
		}
	}
}

// exportedAPI lists, one line each, what the files of dir that ctx builds
// export: functions and methods with their parameter and result types,
// types with their exported fields, constants and variables.
func exportedAPI(t *testing.T, ctx *build.Context, dir string, files []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	expr := func(x ast.Expr) string {
		var b strings.Builder
		if err := printer.Fprint(&b, fset, x); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	fields := func(fl *ast.FieldList) string {
		var parts []string
		for _, f := range fl.List {
			for range max(1, len(f.Names)) {
				parts = append(parts, expr(f.Type))
			}
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	var api []string
	for _, name := range files {
		if ok, err := ctx.MatchFile(dir, name); err != nil {
			t.Fatal(err)
		} else if !ok {
			continue
		}
		for _, decl := range parseFile(t, fset, filepath.Join(dir, name)).Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !ast.IsExported(receiver(d))) {
					continue
				}
				sig := fields(d.Type.Params)
				if d.Type.Results != nil {
					sig += " " + fields(d.Type.Results)
				}
				if d.Recv != nil {
					api = append(api, "method ("+expr(d.Recv.List[0].Type)+") "+d.Name.Name+sig)
				} else {
					api = append(api, "func "+d.Name.Name+sig)
				}
			case *ast.GenDecl:
				api = append(api, genAPI(d, expr)...)
			}
		}
	}
	return api
}

func genAPI(d *ast.GenDecl, expr func(ast.Expr) string) []string {
	var api []string
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			st, ok := s.Type.(*ast.StructType)
			if !ok {
				api = append(api, "type "+s.Name.Name+" "+expr(s.Type))
				continue
			}
			api = append(api, "type "+s.Name.Name+" struct")
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					if n.IsExported() {
						api = append(api, "field "+s.Name.Name+"."+n.Name+" "+expr(f.Type))
					}
				}
			}
		case *ast.ValueSpec:
			for _, n := range s.Names {
				if n.IsExported() {
					api = append(api, d.Tok.String()+" "+n.Name)
				}
			}
		}
	}
	return api
}
