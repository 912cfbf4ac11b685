package doublebarrier

import (
	"crypto/rand"
	"fmt"
)

// newUUID returns a random (version 4) UUID in its 36-character form, as Java's
// UUID.randomUUID().toString().
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand crashes the program rather)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
