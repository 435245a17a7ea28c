package jsonv

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRoundTripKeepsOrderAndNumbers(t *testing.T) {
	in := `{"z":1,"a":[1.50,2e3,-0,{"y":null,"b":true}],"m":"x\"y\\z\n\u00e9😀<>&","ttl":10.0}`
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := string(Marshal(v))
	want := `{"z":1,"a":[1.50,2e3,-0,{"y":null,"b":true}],"m":"x\"y\\z\né😀<>&","ttl":10.0}`
	if got != want {
		t.Errorf("round trip\n got %s\nwant %s", got, want)
	}
}

func TestParseRejects(t *testing.T) {
	bad := []string{
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[01]`, `1.`, `.5`, `-`, `1e`, `+1`,
		`"abc`, "\"a\x01\"", `"\x"`, `"\u12"`, `nul`, `truex`, `{"a":1}x`, `{'a':1}`, `NaN`, `Infinity`,
		"\"\xff\"", `{"a":1 "b":2}`,
	}
	for _, s := range bad {
		if v, err := Parse([]byte(s)); err == nil {
			t.Errorf("Parse(%q) = %v; want error", s, v)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, err := Parse([]byte(deep)); err == nil {
		t.Error("nesting beyond MaxDepth accepted")
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("nesting of MaxDepth rejected: %v", err)
	}
	// Far deeper input must fail cleanly, not overflow the stack.
	huge := strings.Repeat(`{"a":`, 1_000_000)
	if _, err := Parse([]byte(huge)); err == nil {
		t.Error("huge nesting accepted")
	}
}

func TestObjectOps(t *testing.T) {
	o, err := ParseObject([]byte(`{"a":3,"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	o.Set("c", "x")
	if !o.Delete("a") || o.Delete("zz") {
		t.Error("Delete")
	}
	if got := string(Marshal(o)); got != `{"b":2,"c":"x"}` {
		t.Errorf("after ops: %s", got)
	}
	c := Clone(o).(*Object)
	c.Set("b", "changed")
	if v, _ := o.Get("b"); v != Number("2") {
		t.Error("Clone shares state")
	}
	if _, err := ParseObject([]byte(`[1]`)); err == nil {
		t.Error("ParseObject accepted an array")
	}
}

func TestEqual(t *testing.T) {
	a, _ := Parse([]byte(`{"x":[1,2.0,{"k":"v"}],"y":null}`))
	b, _ := Parse([]byte(`{"y":null,"x":[1.0,2,{"k":"v"}]}`))
	c, _ := Parse([]byte(`{"y":null,"x":[1.0,2,{"k":"w"}]}`))
	if !Equal(a, b) || Equal(a, c) {
		t.Error("Equal")
	}
}

func TestFromGo(t *testing.T) {
	var x any
	d := json.NewDecoder(strings.NewReader(`{"b":[1,"s",true,null],"a":1.5}`))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		t.Fatal(err)
	}
	v, err := FromGo(x)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(Marshal(v)); got != `{"a":1.5,"b":[1,"s",true,null]}` {
		t.Errorf("FromGo: %s", got)
	}
	if v, _ := FromGo(float64(3)); v != Number("3") {
		t.Errorf("FromGo(3.0) = %v", v)
	}
}

// TestPaths: SetPath makes the objects on its way, replacing a member that
// holds anything else, and GetPath reads back what it set and nothing past
// a value that is not an object.
func TestPaths(t *testing.T) {
	o := NewObject(0)
	o.Set("a", Number("1"))
	o.SetPath([]string{"a", "b"}, "x")
	o.SetPath([]string{"a", "c"}, true)
	o.SetPath([]string{"d"}, nil)
	if got := string(Marshal(o)); got != `{"a":{"b":"x","c":true},"d":null}` {
		t.Errorf("after SetPath: %s", got)
	}
	for _, c := range []struct {
		path    []string
		want    Value
		present bool
	}{
		{[]string{"a", "b"}, "x", true},
		{[]string{"d"}, nil, true},
		{[]string{"a", "b", "c"}, nil, false},
		{[]string{"e"}, nil, false},
	} {
		if v, ok := o.GetPath(c.path); v != c.want || ok != c.present {
			t.Errorf("GetPath(%q) = %v, %v; want %v, %v", c.path, v, ok, c.want, c.present)
		}
	}
}
