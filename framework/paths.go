package framework

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrInvalidPath is matched by every error that reports a path ZooKeeper
// would refuse. Check for it with errors.Is; the details are in a *PathError.
// It matches ErrInvalidArgument. Its message has no package prefix: the error
// that wraps it says whose path it was ("mutex: invalid path ...").
var ErrInvalidPath = newFamilyError("invalid path", ErrInvalidArgument)

// PathError reports an invalid ZooKeeper path: which path, where in it the
// first problem was found, and why.
type PathError struct {
	// Path is the path as it was given.
	Path string
	// Index is the byte offset in Path at which the problem was found.
	Index int
	// Reason says what is wrong, e.g. "empty node name".
	Reason string
}

// Error returns a message such as
// `invalid path "/a//b": empty node name at index 3`; the caller's error says
// whose path it was.
func (e *PathError) Error() string {
	return fmt.Sprintf("invalid path %q: %s at index %d", e.Path, e.Reason, e.Index)
}

// Is reports whether target is ErrInvalidPath or ErrInvalidArgument, so that
// errors.Is(err, ErrInvalidPath) holds for every *PathError.
func (e *PathError) Is(target error) bool {
	return target == ErrInvalidPath || target == ErrInvalidArgument
}

// reservedPath is the subtree ZooKeeper keeps for itself (quotas, config).
const reservedPath = "/zookeeper"

// ValidatePath checks p against the rules ZooKeeper's server applies
// (PathUtils.validatePath): p is not empty, starts with '/', does not end with
// '/' unless it is the root "/", has no empty node name ("//") and no "." or
// ".." node name, and contains neither NUL nor a character in U+0001–U+001F,
// U+007F–U+009F, U+D800–U+F8FF or U+FFF0–U+FFFF. Characters above U+FFFF are
// refused too (Java sees them as surrogates, which fall in U+D800–U+DFFF), and
// so is anything that is not valid UTF-8.
//
// The error, if any, is a *PathError that matches ErrInvalidPath and describes
// the first problem found. ValidatePath does not refuse the reserved subtree
// /zookeeper; see IsReservedPath.
func ValidatePath(p string) error {
	return validatePath(p, false)
}

// ValidatePathSequential is ValidatePath for a path given to a sequential
// create, to which ZooKeeper appends the sequence number: the path may end
// with '/' (its last node name is then the number alone), and a last node
// name of "." or ".." is allowed because the number makes it ".0000000001".
func ValidatePathSequential(p string) error {
	return validatePath(p, true)
}

// validatePath applies ZooKeeper's rules. With sequential set it checks p as
// the server checks p followed by a digit.
func validatePath(p string, sequential bool) error {
	if p == "" {
		return &PathError{Path: p, Index: 0, Reason: "empty path"}
	}
	if p[0] != '/' {
		return &PathError{Path: p, Index: 0, Reason: "path must start with '/'"}
	}
	if len(p) == 1 {
		return nil
	}
	if !sequential && p[len(p)-1] == '/' {
		return &PathError{Path: p, Index: len(p) - 1, Reason: "path must not end with '/'"}
	}
	for start := 1; start <= len(p); {
		end := len(p)
		if j := strings.IndexByte(p[start:], '/'); j >= 0 {
			end = start + j
		}
		name := p[start:end]
		last := end == len(p)
		switch {
		case name == "" && !last:
			return &PathError{Path: p, Index: end, Reason: "empty node name"}
		case name == "":
			// A trailing '/' in a sequential path: the number becomes the name.
			return nil
		case (name == "." || name == "..") && (!last || !sequential):
			return &PathError{Path: p, Index: start, Reason: fmt.Sprintf("relative node name %q", name)}
		}
		for i := 0; i < len(name); {
			r, size := utf8.DecodeRuneInString(name[i:])
			if reason := badRune(r, size, name[i]); reason != "" {
				return &PathError{Path: p, Index: start + i, Reason: reason}
			}
			i += size
		}
		start = end + 1
	}
	return nil
}

// badRune says why r (decoded from size bytes starting with b) may not appear
// in a node name, or returns "" when it may.
func badRune(r rune, size int, b byte) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return fmt.Sprintf("invalid UTF-8 byte %#02x", b)
	case r == 0:
		return "NUL character"
	case r > 0xFFFF:
		return fmt.Sprintf("character %U outside the Basic Multilingual Plane", r)
	case r <= 0x1F,
		r >= 0x7F && r <= 0x9F,
		r >= 0xD800 && r <= 0xF8FF,
		r >= 0xFFF0:
		return fmt.Sprintf("invalid character %U", r)
	}
	return ""
}

// IsReservedPath reports whether p is /zookeeper or a path below it, the
// subtree ZooKeeper keeps for itself. It does not validate p.
func IsReservedPath(p string) bool {
	return p == reservedPath || strings.HasPrefix(p, reservedPath+"/")
}

// JoinPath joins parent and children into an absolute path with exactly one
// '/' between parts, like Curator's ZKPaths.makePath. Leading and trailing
// slashes of every part are dropped and empty parts are skipped, so
// JoinPath("/", "a") and JoinPath("", "/a/") are both "/a", and JoinPath("")
// is "/". Slashes inside a part are kept as they are. JoinPath does not
// validate the result.
func JoinPath(parent string, children ...string) string {
	var b strings.Builder
	n := len(parent) + 1
	for _, c := range children {
		n += len(c) + 1
	}
	b.Grow(n) // one allocation: the result is never longer
	add := func(part string) {
		part = strings.Trim(part, "/")
		if part == "" {
			return
		}
		b.WriteByte('/')
		b.WriteString(part)
	}
	add(parent)
	for _, c := range children {
		add(c)
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// SplitPath returns the node names of p in order: "/a/b/c" gives
// ["a" "b" "c"] and "/" gives nil. Empty names (from "//" or a leading or
// trailing '/') are left out, so for every valid path p,
// JoinPath("", SplitPath(p)...) == p.
func SplitPath(p string) []string {
	var names []string
	for name := range strings.SplitSeq(p, "/") {
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}

// NodeName returns the last node name of p, the part after its last '/', like
// Curator's ZKPaths.getNodeFromPath: "/a/b" gives "b" and "/" gives "". A p
// without '/' is returned whole.
func NodeName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// ParentPath returns the path of p's parent: "/a/b" gives "/a", "/a" gives
// "/", and "/" (which has no parent) gives "". A p without '/' also gives "".
func ParentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0 || p == "/":
		return ""
	case i == 0:
		return "/"
	}
	return p[:i]
}

// FixForNamespace returns p as seen by the server when the client works in
// namespace, like Curator's ZKPaths.fixForNamespace: with namespace "ns",
// "/a" becomes "/ns/a" and "/" becomes "/ns". An empty namespace leaves p
// unchanged. The namespace may be written with or without slashes ("ns",
// "/ns", "a/b").
//
// Unlike Curator, a trailing '/' on p is kept ("/a/" becomes "/ns/a/"), so a
// sequential create of "/a/" makes a child of "/ns/a" as it would make a
// child of "/a" without the namespace. FixForNamespace does not validate p.
func FixForNamespace(namespace, p string) string {
	if strings.Trim(namespace, "/") == "" {
		return p
	}
	fixed := JoinPath(namespace, p)
	if len(p) > 1 && p[len(p)-1] == '/' && fixed != "/" {
		fixed += "/"
	}
	return fixed
}

// StripNamespace undoes FixForNamespace for a path the server returned, such
// as the name of a created sequential node: with namespace "ns", "/ns/a"
// becomes "/a" and "/ns" becomes "/". A p that is not the namespace or below
// it is returned unchanged, as is every p when namespace is empty.
func StripNamespace(namespace, p string) string {
	if strings.Trim(namespace, "/") == "" {
		return p
	}
	root := JoinPath(namespace)
	switch {
	case p == root:
		return "/"
	case strings.HasPrefix(p, root+"/"):
		return p[len(root):]
	}
	return p
}

// SequenceSuffix returns the part of name after the last occurrence of
// marker, or the whole name when marker does not occur in it or is empty,
// like Curator's StandardLockInternalsDriver.fixForSorting. With marker
// "lock-", "_c_1f…-lock-0000000007" gives "0000000007".
func SequenceSuffix(name, marker string) string {
	if marker == "" {
		return name
	}
	i := strings.LastIndex(name, marker)
	if i < 0 {
		return name
	}
	return name[i+len(marker):]
}

// SortBySequence sorts children in place by SequenceSuffix(child, marker),
// comparing the suffixes as strings (ZooKeeper pads sequence numbers to ten
// digits, so this is numeric order until the counter wraps), and breaks ties
// by the whole name. The sort is stable.
func SortBySequence(children []string, marker string) {
	slices.SortStableFunc(children, func(a, b string) int {
		if c := strings.Compare(SequenceSuffix(a, marker), SequenceSuffix(b, marker)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}

// ParseSequence returns the sequence number at the end of a sequential node's
// name, which ZooKeeper writes with Java's "%010d": "lock-0000000007" gives 7.
//
// ZooKeeper's counter is a signed 32-bit int and wraps to negative, written as
// "-000000005" or "-2147483648". A '-' right before the digits is read as a
// sign when nine digits follow it, when it starts name, when it follows
// anything but an ASCII letter or digit ("lock--2147483647",
// "__READ__-1500000000"), or when the ten digits exceed math.MaxInt32.
// Otherwise it is taken to end a marker such as "lock-", so "lock-1500000000"
// gives 1500000000 even though it could be the marker "lock" followed by a
// wrapped number. To read a wrapped number without that ambiguity, pass the
// suffix alone: ParseSequence(SequenceSuffix(name, marker)).
//
// ParseSequence returns an error if name does not end in a sequence number in
// the range of a signed 32-bit int. Sort by SortBySequence, not by this number.
func ParseSequence(name string) (int64, error) {
	n := len(name)
	digits := 0
	for digits < n && digits < 10 && isDigit(name[n-1-digits]) {
		digits++
	}
	switch {
	case digits == 9 && n >= 10 && name[n-10] == '-':
		return -parseDigits(name[n-9:]), nil
	case digits < 10:
		return 0, fmt.Errorf("framework: %q does not end in a 10-digit sequence number", name)
	}
	v := parseDigits(name[n-10:])
	signed := n >= 11 && name[n-11] == '-' &&
		(n == 11 || !isAlnum(name[n-12]) || v > math.MaxInt32)
	if signed {
		v = -v
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		return 0, fmt.Errorf("framework: sequence number at the end of %q is out of range", name)
	}
	return v, nil
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func isAlnum(b byte) bool {
	return isDigit(b) || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// parseDigits parses s, which holds at most ten ASCII digits.
func parseDigits(s string) int64 {
	var v int64
	for i := 0; i < len(s); i++ {
		v = v*10 + int64(s[i]-'0')
	}
	return v
}
