package discovery

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jacksonJSON escapes strings (keys too) as Jackson does, and nothing outside them.
func TestJacksonStrings(t *testing.T) {
	got, err := jacksonJSON(map[string]any{"k\u2028": []any{"a\"b\\c/d", "\b\t\n\f\r\x00\x1f\x7f", "<&>\u2029é", 1.5, nil, true}})
	require.NoError(t, err)
	assert.Equal(t, "{\"k\u2028\":[\"a\\\"b\\\\c/d\",\"\\b\\t\\n\\f\\r\\u0000\\u001F\x7f\",\"<&>\u2029é\",1.5,null,true]}", string(got))
	got, err = jacksonJSON("bad \xff utf-8")
	require.NoError(t, err)
	assert.Equal(t, "\"bad \ufffd utf-8\"", string(got))
}
