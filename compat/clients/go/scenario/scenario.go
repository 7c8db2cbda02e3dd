// Package scenario holds what the Go drivers of the client matrix share: the arguments, the record
// contents and the output protocol of run_matrix.py (STEP / REC / INFO lines, ../README.md).
package scenario

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Args are the driver's command line: BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST.
type Args struct {
	Bootstrap, Topic, Group    string
	Records, Partitions, First int
}

// Parse reads os.Args; exits 2 on a bad command line.
func Parse() Args {
	if len(os.Args) < 7 {
		fmt.Fprintln(os.Stderr, "usage: driver BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST")
		os.Exit(2)
	}
	n := func(s string) int {
		v, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad number:", s)
			os.Exit(2)
		}
		return v
	}
	return Args{os.Args[1], os.Args[2], os.Args[3], n(os.Args[4]), n(os.Args[5]), n(os.Args[6])}
}

var outMu sync.Mutex

// Printf writes one protocol line to stdout.
func Printf(format string, a ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf(format+"\n", a...)
}

// Step runs f and prints `STEP name PASS detail` or `STEP name FAIL error`.
func Step(name string, f func() (string, error)) {
	detail, err := f()
	if err != nil {
		Printf("STEP %s FAIL %s", name, oneLine(err.Error()))
		return
	}
	Printf("STEP %s PASS %s", name, oneLine(detail))
}

// Skip prints `STEP name SKIP why`.
func Skip(name, why string) { Printf("STEP %s SKIP %s", name, why) }

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// Key, Value: record i's key and value for client c.
func Key(i int) string             { return fmt.Sprintf("k%04d", i) }
func Value(i int, c string) string { return fmt.Sprintf("v%04d-%s", i, c) }

// Header is one record header.
type Header struct{ Key, Value string }

// Headers returns record i's headers (h-index=i, h-client=c).
func Headers(i int, c string) []Header {
	return []Header{{"h-index", strconv.Itoa(i)}, {"h-client", c}}
}

// Reads remembers which record indexes each consume phase saw, per partition in offset order.
type Reads struct {
	mu     sync.Mutex
	byPart map[int32][]int
}

// Rec prints a REC line and remembers the record.
func (r *Reads) Rec(phase int, partition int32, offset int64, key, value string, hdrs []Header) {
	hs := make([]string, len(hdrs))
	for i, h := range hdrs {
		hs[i] = h.Key + "=" + h.Value
	}
	Printf("REC\t%d\t%d\t%d\t%s\t%s\t%s", phase, partition, offset, key, value, strings.Join(hs, ","))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPart == nil {
		r.byPart = map[int32][]int{}
	}
	if len(key) == 5 {
		if i, err := strconv.Atoi(key[1:]); err == nil {
			r.byPart[partition] = append(r.byPart[partition], i)
		}
	}
}

// ExpectedAfter returns, for partition p, the number of records with index < first (the offset
// that ListOffsets for timestamp base+first must answer, records being produced in index order
// with CreateTime base+index) and the partition's record count.
func (r *Reads) ExpectedAfter(p int32, first int) (int64, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := append([]int(nil), r.byPart[p]...)
	sort.Ints(idx)
	n := int64(0)
	for _, i := range idx {
		if i < first {
			n++
		}
	}
	return n, int64(len(idx))
}
