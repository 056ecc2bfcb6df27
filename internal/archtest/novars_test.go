package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedVars are the package-level variables of production code that may
// change after their declaration, by import path and name, each with the
// reason it must stay package-level. Everything else a package keeps
// between calls is a field of the part that owns it (STYLE.md: "Each part
// owns its state"); a test seam is a field set through an option.
var allowedVars = map[string]string{
	// A registry, as database/sql's drivers: filled by RegisterStore from
	// the init of the package that implements the entry, read by name.
	"github.com/lossless-engine/contextengine/lossless.storesMu": "guards the store registry (RegisterStore, from lossless/postgres's and lossless/badger's init)",
	"github.com/lossless-engine/contextengine/lossless.stores":   "the store registry (RegisterStore)",

	// Process-wide on purpose: what they guard is shared by every engine
	// of the process.
	"github.com/lossless-engine/contextengine/compaction.pathLocks":      "one lock per session transcript for the whole process: two legacy engines of one process compacting one file must not interleave",
	"github.com/lossless-engine/contextengine/index/bleveindex.failures": "Bleve's asynchronous errors reach a process-wide callback, which knows only the index's path: they are kept by path until the Index of that path reads them",

	// Computed once, then read only.
	"github.com/lossless-engine/contextengine/core.loaderOnce":            "installs tiktoken's offline BPE loader once (tiktoken-go keeps it process-wide)",
	"github.com/lossless-engine/contextengine/core.tiktokenMu":            "guards tiktokenCache",
	"github.com/lossless-engine/contextengine/core.tiktokenCache":         "each encoding's ranks (some 20 MB) loaded once per process, read only after",
	"github.com/lossless-engine/contextengine/store/badgerstore.zstdOnce": "makes the zstd encoder and decoder once (both safe for concurrent use), read only after",
	"github.com/lossless-engine/contextengine/store/badgerstore.zstdEnc":  "set once by zstdOnce",
	"github.com/lossless-engine/contextengine/store/badgerstore.zstdDec":  "set once by zstdOnce",
	"github.com/lossless-engine/contextengine/store/badgerstore.zstdErr":  "set once by zstdOnce",

	// Left to another change of issue 40 (the space guard's rework).
	"github.com/lossless-engine/contextengine/store/badgerstore.freeSpace": "the free-space lookup tests replace; becomes an option with the space guard's rework",
}

// TestNoMutablePackageVars parses every Go file of the module outside
// third_party and testdata and fails on a package-level variable of
// production code that changes after its declaration (see
// mutablePackageVars) unless allowedVars lists it with its reason.
func TestNoMutablePackageVars(t *testing.T) {
	root, module := moduleRoot(t)
	vars, found, err := mutablePackageVars(root, module)
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) < 10 {
		t.Fatalf("found the package-level variables of %d packages only: is %s the module?", len(vars), root)
	}
	var keys []string
	for k := range found {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if why, ok := allowedVars[k]; ok {
			t.Logf("allowed: %s: %s", k, why)
			continue
		}
		t.Errorf("package-level variable %s changes after its declaration (make it a field of the part that owns it, set through an option; or list it in allowedVars with the reason it must stay):\n\t%s",
			k, strings.Join(found[k], "\n\t"))
	}
	for k := range allowedVars {
		dir, name := k[:strings.LastIndex(k, ".")], k[strings.LastIndex(k, ".")+1:]
		if vars[dir][name] == nil {
			// Not an error: a change made beside this one may remove it.
			t.Logf("allowedVars lists %s, which is no longer a package-level variable: remove it", k)
		}
	}
}

// localNames returns the names fn declares inside itself: its receiver,
// parameters and results, and every variable its body declares.
func localNames(fn *ast.FuncDecl) map[string]bool {
	out := map[string]bool{}
	fields := func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, f := range fl.List {
			for _, n := range f.Names {
				out[n.Name] = true
			}
		}
	}
	fields(fn.Recv)
	fields(fn.Type.Params)
	fields(fn.Type.Results)
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE {
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		case *ast.RangeStmt:
			if x.Tok == token.DEFINE {
				for _, e := range []ast.Expr{x.Key, x.Value} {
					if id, ok := e.(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range x.Names {
				out[id.Name] = true
			}
		case *ast.FuncLit:
			fields(x.Type.Params)
			fields(x.Type.Results)
		case *ast.TypeSwitchStmt:
			if a, ok := x.Assign.(*ast.AssignStmt); ok {
				for _, l := range a.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		}
		return true
	})
	return out
}

// moduleRoot returns the directory of the module's go.mod, found upwards
// from the test's directory, and the module's path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// mutablePackageVars parses every Go file under root (the directory of
// module) outside third_party, testdata, vendor and hidden directories.
// It returns the package-level variables of production code (import path
// -> name -> declaration) and, by "import path.name", where and why each
// that changes after its declaration does: it is assigned, incremented,
// has its address taken, is deleted from or cleared anywhere (production
// code or tests, of its package or another), or holds a sync or
// sync/atomic value (it exists to be changed).
func mutablePackageVars(root, module string) (map[string]map[string]*ast.ValueSpec, map[string][]string, error) {
	fset := token.NewFileSet()
	type file struct {
		f       *ast.File
		dir     string // import path of its directory
		test    bool
		imports map[string]string // local name -> import path
	}
	var files []file
	vars := map[string]map[string]*ast.ValueSpec{} // import path -> name -> spec
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "third_party" || name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		dir := module
		if rel != "." {
			dir = path.Join(module, filepath.ToSlash(rel))
		}
		fl := file{f: f, dir: dir, test: strings.HasSuffix(p, "_test.go"), imports: map[string]string{}}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			name := path.Base(ip)
			if im.Name != nil {
				name = im.Name.Name
			}
			fl.imports[name] = ip
		}
		files = append(files, fl)
		if fl.test || strings.HasSuffix(f.Name.Name, "_test") {
			return nil
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, n := range vs.Names {
					if n.Name == "_" {
						continue
					}
					if vars[dir] == nil {
						vars[dir] = map[string]*ast.ValueSpec{}
					}
					vars[dir][n.Name] = vs
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("archtest: %w", err)
	}

	found := map[string][]string{} // import path.name -> where and why
	report := func(key string, pos token.Pos, why string) {
		found[key] = append(found[key], fset.Position(pos).String()+": "+why)
	}
	// A var declared with a sync or sync/atomic value exists to be changed.
	for dir, names := range vars {
		for name, vs := range names {
			ast.Inspect(vs, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "sync" || x.Name == "atomic") {
						report(dir+"."+name, sel.Pos(), "holds a "+x.Name+"."+sel.Sel.Name)
						return false
					}
				}
				return true
			})
		}
	}
	for _, fl := range files {
		own := vars[fl.dir]
		if strings.HasSuffix(fl.f.Name.Name, "_test") {
			own = nil // an external test package sees its package's vars only by import
		}
		// locals are the names declared inside functions: a package var
		// shadowed by one is not the package var. (Coarse: any local of
		// that name in the function hides it in the whole function.)
		target := func(e ast.Expr, locals map[string]bool) (string, bool) {
			for {
				switch x := e.(type) {
				case *ast.ParenExpr:
					e = x.X
				case *ast.StarExpr:
					e = x.X
				case *ast.IndexExpr:
					e = x.X
				case *ast.IndexListExpr:
					e = x.X
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && !locals[id.Name] && own[id.Name] == nil {
						if ip, ok := fl.imports[id.Name]; ok {
							if vars[ip][x.Sel.Name] != nil {
								return ip + "." + x.Sel.Name, true
							}
							return "", false
						}
					}
					e = x.X
				case *ast.Ident:
					if own[x.Name] != nil && !locals[x.Name] {
						return fl.dir + "." + x.Name, true
					}
					return "", false
				default:
					return "", false
				}
			}
		}
		for _, decl := range fl.f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			locals := localNames(fn)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				check := func(e ast.Expr, why string) {
					if key, ok := target(e, locals); ok {
						report(key, e.Pos(), why)
					}
				}
				switch x := n.(type) {
				case *ast.AssignStmt:
					if x.Tok != token.DEFINE {
						for _, l := range x.Lhs {
							check(l, "assigned")
						}
					}
				case *ast.IncDecStmt:
					check(x.X, "incremented or decremented")
				case *ast.RangeStmt:
					if x.Tok == token.ASSIGN {
						if x.Key != nil {
							check(x.Key, "assigned by range")
						}
						if x.Value != nil {
							check(x.Value, "assigned by range")
						}
					}
				case *ast.UnaryExpr:
					if x.Op == token.AND {
						check(x.X, "its address taken")
					}
				case *ast.CallExpr:
					if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(x.Args) > 0 {
						check(x.Args[0], "passed to "+id.Name)
					}
				}
				return true
			})
		}
	}
	return vars, found, nil
}

// TestMutablePackageVarsFinds runs the check on a module written for it:
// it finds each way a package-level variable changes (in production code,
// in its package's tests, in an external test package through its
// import), and leaves alone read-only tables, constants, shadowing locals
// and what third_party holds.
func TestMutablePackageVarsFinds(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("a/a.go", `package a

import "sync"

var table = map[string]int{"x": 1} // read only
var counter int
var seam = 3
var mu sync.Mutex
var byName = map[string]int{}
var gone = map[string]int{}
var addr int
var Exported = 1
var shadowed = 2

const c = 1

func F() int {
	counter++
	byName["k"] = 1
	delete(gone, "k")
	p := &addr
	shadowed := 5
	shadowed = 6
	return table["x"] + c + *p + shadowed
}
`)
	write("a/a_test.go", `package a

func setSeam() { seam = 4 }
`)
	write("b/b_test.go", `package b_test

import "example.com/m/a"

func set() { a.Exported = 2 }
`)
	write("third_party/x/x.go", `package x

var hidden int

func G() { hidden = 1 }
`)
	vars, found, err := mutablePackageVars(root, "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	if len(vars["example.com/m/a"]) != 9 || vars["example.com/m/third_party/x"] != nil {
		t.Fatalf("package vars %v", vars)
	}
	var got []string
	for k := range found {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"example.com/m/a.Exported", "example.com/m/a.addr", "example.com/m/a.byName",
		"example.com/m/a.counter", "example.com/m/a.gone", "example.com/m/a.mu", "example.com/m/a.seam"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
}
