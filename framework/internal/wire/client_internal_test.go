package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewClientRefusesBadConfig(t *testing.T) {
	_, err := NewClient(ClientConfig{})
	assert.Error(t, err, "no servers")
	h, err := NewHostList([]string{"a:1"})
	require.NoError(t, err)
	_, err = NewClient(ClientConfig{Hosts: h, Chroot: "app/"})
	assert.Error(t, err)
}
