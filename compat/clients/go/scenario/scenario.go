// Package scenario holds what the Go drivers of the client matrix share: the arguments, the record
// contents and the output protocol of run_matrix.py (STEP / REC / INFO lines, ../README.md).
package scenario

import (
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
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

// ModuleVersion is "label version" of the module at path as this binary was built with it, or label alone
// when the build information does not list it.
func ModuleVersion(path, label string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return label + " " + d.Version
			}
		}
	}
	return label
}

// IsSplit tells whether a and b, the partitions two members of a group own, are both non-empty, disjoint
// and together cover `partitions` partitions: the end of a cooperative rebalance.
func IsSplit[T ~int | ~int32](a, b []T, partitions int) bool {
	all := map[T]bool{}
	for _, p := range a {
		all[p] = true
	}
	for _, p := range b {
		if all[p] {
			return false
		}
		all[p] = true
	}
	return len(a) > 0 && len(b) > 0 && len(all) == partitions
}

// CheckTimeOffset judges the offset a client got from ListOffsets for timestamp base+first on partition p:
// the count of records with index < first there, or, when no record of p is at or after that time, -1 or
// the end offset (clients answer either).
func (r *Reads) CheckTimeOffset(p int32, first int, got int64) error {
	want, size := r.ExpectedAfter(p, first)
	if got != want && !(want == size && (got == -1 || got == size)) {
		return fmt.Errorf("partition %d: offset %d for timestamp base+%d, expected %d", p, got, first, want)
	}
	return nil
}

// WaitTopicGone is the end of the delete step: polls listed() (is the topic still in the cluster's
// metadata?) every 200 ms until it answers false without error, for at most 30 s.
func WaitTopicGone(listed func() (bool, error)) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		present, err := listed()
		if err == nil && !present {
			return "DeleteTopics, no longer listed", nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("topic still listed 30 s after delete (%v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// PhaseDone is the verdict of a consume phase that took `got` of `want` records within its 60 s.
func PhaseDone(got, want int) (string, error) {
	if got < want {
		return "", fmt.Errorf("read %d of %d records in 60 s", got, want)
	}
	return fmt.Sprintf("%d records, committed", got), nil
}

// The transactions step (../../README.md): on Topic-txn, a transactional producer commits TxnCounts[0]
// records (and the group Group-txn's offset TxnOffset for Topic partition 0 where the client can send
// offsets), aborts TxnCounts[1], commits TxnCounts[2]. Record i of transaction t has key "k<i>", value
// "<client>-<TxnTags[t]>-<i>" and goes to partition i % 3. Drivers print what a read_committed and a
// read_uncommitted consumer read as TXN lines and the group's offset as TXNOFFSET; run_matrix.py checks.
var (
	TxnTags   = []string{"c", "a", "c2"}
	TxnCounts = []int{30, 20, 10}
)

// TxnOffset is the offset sent for the group Group-txn on Topic partition 0 in the first transaction.
const TxnOffset = 7

// TxnKey, TxnValue: record i of transaction t (0, 1, 2) for client c.
func TxnKey(i int) string                { return fmt.Sprintf("k%d", i) }
func TxnValue(t, i int, c string) string { return fmt.Sprintf("%s-%s-%d", c, TxnTags[t], i) }

// TxnRec prints one record a consumer read from Topic-txn; view is "committed" or "uncommitted".
func TxnRec(view string, partition int32, offset int64, key, value string) {
	Printf("TXN\t%s\t%d\t%d\t%s\t%s", view, partition, offset, key, value)
}

// TxnReadUntil polls with next() until want records were read or 30 s passed, then 1 s more (an
// extra record is a failure too); next returns the records of one poll. Returns how many were read.
func TxnReadUntil(view string, want int, next func(time.Duration) []TxnRecord) int {
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range next(200 * time.Millisecond) {
			got++
			TxnRec(view, r.Partition, r.Offset, r.Key, r.Value)
		}
		if got >= want {
			if grace := time.Now().Add(time.Second); grace.Before(deadline) {
				deadline = grace
			}
			want = 1 << 30
		}
	}
	return got
}

// TxnRecord is one consumed record of Topic-txn.
type TxnRecord struct {
	Partition  int32
	Offset     int64
	Key, Value string
}

// TxnWaitOffset polls fetch() (the group's committed offset for Topic partition 0) until it answers
// TxnOffset, for at most 15 s (the offset shows once the COMMIT marker is in __consumer_offsets);
// prints TXNOFFSET with the last answer.
func TxnWaitOffset(fetch func() (int64, error)) (int64, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		o, err := fetch()
		if (err == nil && o == TxnOffset) || time.Now().After(deadline) {
			if err != nil {
				return o, fmt.Errorf("committed offset: %w", err)
			}
			Printf("TXNOFFSET %d", o)
			return o, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}
