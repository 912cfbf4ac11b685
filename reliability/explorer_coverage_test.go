package reliability_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The explorer's coverage, operations × families of moves, as docs/reliability.md shows
// it: the table is made from xops and xmoves, and the test fails when the docs no longer
// show what the explorer runs.

// xfamilies are the move families, in the docs' column order.
var xfamilies = []string{"wire", "another client", "caller", "listeners", "contender", "process"}

// xcallerMoves are the moves by the caller (no flag of xmove marks them).
var xcallerMoves = []string{"cancel", "close-recipe", "close-client"}

// family returns the family of move m.
func (m xmove) family() string {
	switch {
	case m.process:
		return "process"
	case m.listener:
		return "listeners"
	case m.lagging || m.contender:
		return "contender"
	case m.other:
		return "another client"
	case slices.Contains(xcallerMoves, m.name):
		return "caller"
	}
	return "wire"
}

// explorerCoverage returns the docs' two tables: the moves of each family, then the
// number of moves of each family every operation runs under (at each request where the
// move applies; the other client's moves only at requests where the operation has a node).
func explorerCoverage() string {
	var b strings.Builder
	b.WriteString("| family | moves |\n|---|---|\n")
	for _, f := range xfamilies {
		var names []string
		for _, m := range xmoves {
			if m.family() == f {
				names = append(names, "`"+m.name+"`")
			}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", f, strings.Join(names, ", "))
	}
	b.WriteString("\n| operation | " + strings.Join(xfamilies, " | ") + " |\n|---|" + strings.Repeat("---|", len(xfamilies)) + "\n")
	for i := range xops {
		op := &xops[i]
		fmt.Fprintf(&b, "| `%s` |", op.name)
		for _, f := range xfamilies {
			n := 0
			for _, m := range xmoves {
				if m.family() == f && op.applicable(m) {
					n++
				}
			}
			cell := "–"
			if n > 0 {
				cell = fmt.Sprint(n)
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestExplorerCoverageDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	want := explorerCoverage()
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/reliability.md does not show the explorer's coverage as it is; put these tables in its explorer section:\n\n%s", want)
	}
}
