package wire

import (
	"errors"
	"io"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

func TestErrorUnwrapsToGoZookeeperValues(t *testing.T) {
	tests := []struct {
		code int32
		want error
	}{
		{-101, zk.ErrNoNode},
		{-102, zk.ErrNoAuth},
		{-103, zk.ErrBadVersion},
		{-108, zk.ErrNoChildrenForEphemerals},
		{-110, zk.ErrNodeExists},
		{-111, zk.ErrNotEmpty},
		{-112, zk.ErrSessionExpired},
		{-114, zk.ErrInvalidACL},
		{-115, zk.ErrAuthFailed},
		{-118, zk.ErrSessionMoved},
		{-8, zk.ErrBadArguments},
		{-123, zk.ErrReconfigDisabled},
	}
	for _, tt := range tests {
		err := codeError(tt.code, 7)
		assert.ErrorIs(t, err, tt.want, "code %d", tt.code)
		assert.Equal(t, "wire: "+tt.want.Error(), err.Error())
		var e *Error
		if assert.True(t, errors.As(err, &e)) {
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, int64(7), e.Zxid)
		}
	}
}

func TestErrorNamesCodesGoZookeeperLacks(t *testing.T) {
	err := codeError(CodeNoWatcher, 0)
	assert.Equal(t, "wire: server error -121 (no watcher)", err.Error())
	assert.Nil(t, errors.Unwrap(err))
	assert.Equal(t, "wire: server error -999", codeError(-999, 0).Error())
	assert.NoError(t, codeError(0, 0))
}

func TestConnErrorsWrapGoZookeeperValues(t *testing.T) {
	assert.ErrorIs(t, ErrClosed, zk.ErrClosing)
	assert.ErrorIs(t, ErrConnectionLost, zk.ErrConnectionClosed)
	assert.ErrorIs(t, ErrSessionExpired, zk.ErrSessionExpired)
	err := lost(io.EOF)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "wire: connection lost: EOF", err.Error())
}
