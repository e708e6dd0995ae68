package output

import (
	"bytes"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	Names []string `json:"names"`
}

type doc struct {
	Schema  ckpt.Schema `json:"schema_version"`
	List    []int       `json:"list"`
	Omitted []int       `json:"omitted,omitempty"`
	Raw     []byte      `json:"raw"`
	Inner   inner       `json:"inner"`
	Ptr     *inner      `json:"ptr"`
	Many    []inner     `json:"many"`
	//lint:ignore U1000 an unexported field: the test checks it is not written
	hidden []int
}

func TestWriteJSONEmptyLists(t *testing.T) {
	t.Parallel()
	for _, v := range []any{doc{Many: []inner{{}}}, &doc{Many: []inner{{}}}} {
		var b bytes.Buffer
		require.NoError(t, WriteJSON(&b, v))
		assert.JSONEq(t, `{"schema_version":3,"list":[],"raw":null,"inner":{"names":[]},"ptr":null,"many":[{"names":[]}]}`, b.String())
	}
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, &doc{Schema: 7, Ptr: &inner{}}))
	assert.Contains(t, b.String(), `"schema_version": 7`, "a decoded document keeps its version")
	assert.Contains(t, b.String(), `"ptr": {`+"\n"+`    "names": []`)
}

func TestWriteJSONL(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	type rec struct {
		Name  string  `json:"name"`
		Shape []int64 `json:"shape"`
	}
	require.NoError(t, WriteJSONL(&b, "tensor", []rec{{Name: "a", Shape: []int64{2}}, {Name: "b"}}, struct {
		Tensors int `json:"tensors"`
	}{2}))
	assert.Equal(t, `{"type":"tensor","name":"a","shape":[2]}
{"type":"tensor","name":"b","shape":[]}
{"type":"summary","schema_version":3,"tensors":2}
`, b.String())

	b.Reset()
	require.NoError(t, WriteJSONL(&b, "file", []rec(nil), struct{}{}))
	assert.Equal(t, `{"type":"summary","schema_version":3}`+"\n", b.String(), "an empty list still ends with its summary")
	assert.Error(t, WriteJSONL(&b, "x", []int{1}, nil), "a record must be an object")
}
