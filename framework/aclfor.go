package framework

import (
	"slices"

	"github.com/go-zookeeper/zk"
)

// ACLForPath returns the ACL the client gives a node it creates at path (without
// namespace) when no ACL is given: its ACL provider's (WithACL, WithACLProvider; the
// default is world:anyone with every permission). A recipe that creates a node in a
// Transaction with an ACL of its own making (the client's plus an OwnerToken's entry,
// say) starts from it. The slice is a copy.
func (c *Client) ACLForPath(path string) []zk.ACL {
	return slices.Clone(c.opts.aclProvider.ACLForPath(path))
}
