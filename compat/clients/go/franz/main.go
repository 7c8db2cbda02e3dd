// Client-matrix driver for franz-go (kgo for producing and consuming, kadm for the admin steps).
//
//	franz BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
//
// Prints STEP / REC / INFO lines (run_matrix.py checks them; ../../README.md). Every wait is bounded.
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/compat/clients/scenario"
)

const client = "franz"

func version() string { return scenario.ModuleVersion("github.com/twmb/franz-go", "franz-go") }

func main() {
	a := scenario.Parse()
	scenario.Printf("INFO %s", version())
	seed := kgo.SeedBrokers(strings.Split(a.Bootstrap, ",")...)
	admCl, err := kgo.NewClient(seed)
	if err != nil {
		scenario.Printf("ERROR %v", err)
		return
	}
	adm := kadm.NewClient(admCl)
	defer adm.Close()
	ctx := func(d time.Duration) context.Context {
		// the timer releases the context's resources a second after its deadline
		c, cancel := context.WithTimeout(context.Background(), d)
		time.AfterFunc(d+time.Second, cancel)
		return c
	}
	base := time.Now().Add(-time.Minute).UnixMilli()
	reads := &scenario.Reads{}

	scenario.Step("create", func() (string, error) {
		rs, err := adm.CreateTopics(ctx(30*time.Second), int32(a.Partitions), 1, nil, a.Topic)
		if err != nil {
			return "", err
		}
		if r, err := rs.On(a.Topic, nil); err != nil || r.Err != nil {
			return "", errors.Join(err, r.Err)
		}
		return fmt.Sprintf("CreateTopics %d partitions", a.Partitions), nil
	})

	scenario.Step("produce", func() (string, error) {
		// franz-go producers are idempotent unless DisableIdempotentWrite is given.
		p, err := kgo.NewClient(seed, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			return "", err
		}
		defer p.Close()
		recs := make([]*kgo.Record, a.Records)
		for i := range recs {
			hs := []kgo.RecordHeader{}
			for _, h := range scenario.Headers(i, client) {
				hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
			}
			recs[i] = &kgo.Record{Topic: a.Topic, Key: []byte(scenario.Key(i)), Value: []byte(scenario.Value(i, client)),
				Headers: hs, Timestamp: time.UnixMilli(base + int64(i))}
		}
		if err := p.ProduceSync(ctx(60*time.Second), recs...).FirstErr(); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d records, acks=all, idempotent", a.Records), nil
	})

	phase := func(n, want int) (string, error) {
		c, err := kgo.NewClient(seed, kgo.ConsumerGroup(a.Group), kgo.ConsumeTopics(a.Topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			return "", err
		}
		defer c.Close()
		var taken []*kgo.Record
		deadline := time.Now().Add(60 * time.Second)
		for len(taken) < want && time.Now().Before(deadline) {
			fs := c.PollFetches(ctx(time.Second))
			for _, fe := range fs.Errors() {
				if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
					return "", fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
				}
			}
			fs.EachRecord(func(r *kgo.Record) {
				if len(taken) < want {
					taken = append(taken, r)
				}
			})
		}
		for _, r := range taken {
			hs := []scenario.Header{}
			for _, h := range r.Headers {
				hs = append(hs, scenario.Header{Key: h.Key, Value: string(h.Value)})
			}
			reads.Rec(n, r.Partition, r.Offset, string(r.Key), string(r.Value), hs)
		}
		if err := c.CommitRecords(ctx(30*time.Second), taken...); err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
		return scenario.PhaseDone(len(taken), want)
	}
	scenario.Step("consume", func() (string, error) { return phase(1, a.First) })
	scenario.Step("resume", func() (string, error) { return phase(2, a.Records-a.First) })

	scenario.Step("offsets_for_times", func() (string, error) {
		lo, err := adm.ListOffsetsAfterMilli(ctx(30*time.Second), base+int64(a.First), a.Topic)
		if err != nil {
			return "", err
		}
		d := ""
		for p := int32(0); p < int32(a.Partitions); p++ {
			o, ok := lo.Lookup(a.Topic, p)
			if !ok {
				return "", fmt.Errorf("partition %d missing from ListOffsets", p)
			}
			if o.Err != nil {
				return "", fmt.Errorf("partition %d: %w", p, o.Err)
			}
			// kadm answers the end offset where no record is at or after the time.
			if err := reads.CheckTimeOffset(p, a.First, o.Offset); err != nil {
				return "", err
			}
			d += fmt.Sprintf("%d->%d ", p, o.Offset)
		}
		return d, nil
	})

	scenario.Step("rebalance", func() (string, error) { return rebalance(a, seed) })

	scenario.Step("describe", func() (string, error) {
		td, err := adm.ListTopics(ctx(30*time.Second), a.Topic)
		if err != nil {
			return "", err
		}
		t, ok := td[a.Topic]
		if !ok || t.Err != nil {
			return "", fmt.Errorf("topic not described: %v", t.Err)
		}
		if len(t.Partitions) != a.Partitions {
			return "", fmt.Errorf("%d partitions described, expected %d", len(t.Partitions), a.Partitions)
		}
		for _, p := range t.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return "", fmt.Errorf("partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
			}
		}
		return fmt.Sprintf("%d partitions with leaders", a.Partitions), nil
	})

	scenario.Step("delete_records", func() (string, error) {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: a.Topic, Partition: 0, At: 10, LeaderEpoch: -1})
		rs, err := adm.DeleteRecords(ctx(30*time.Second), os)
		if err != nil {
			return "", err
		}
		r, ok := rs.Lookup(a.Topic, 0)
		if !ok || r.Err != nil {
			return "", fmt.Errorf("no result for partition 0: %v", r.Err)
		}
		if r.LowWatermark != 10 {
			return "", fmt.Errorf("low watermark %d after deleting before 10", r.LowWatermark)
		}
		so, err := adm.ListStartOffsets(ctx(30*time.Second), a.Topic)
		if err != nil {
			return "", err
		}
		if o, _ := so.Lookup(a.Topic, 0); o.Offset != 10 {
			return "", fmt.Errorf("earliest offset %d after DeleteRecords(10) (%v)", o.Offset, o.Err)
		}
		return "partition 0 low watermark 10, earliest 10", nil
	})

	scenario.Step("transactions", func() (string, error) { return transactions(a, seed, adm, ctx) })

	scenario.Step("delete", func() (string, error) {
		rs, err := adm.DeleteTopics(ctx(30*time.Second), a.Topic)
		if err != nil {
			return "", err
		}
		if r, err := rs.On(a.Topic, nil); err != nil || r.Err != nil {
			return "", errors.Join(err, r.Err)
		}
		return scenario.WaitTopicGone(func() (bool, error) {
			td, err := adm.ListTopics(ctx(10 * time.Second))
			return err == nil && td.Has(a.Topic), err
		})
	})
	scenario.Printf("DONE")
}

// member is one group member's view: owned partitions from its callbacks, and what it gave up.
type member struct {
	mu      sync.Mutex
	owned   map[int32]bool
	revoked []int32
	events  []string
}

func (m *member) on(kind string, ps map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, list := range ps {
		for _, p := range list {
			if kind == "+" {
				m.owned[p] = true
			} else {
				delete(m.owned, p)
				m.revoked = append(m.revoked, p)
			}
		}
		if len(list) > 0 {
			m.events = append(m.events, fmt.Sprintf("%s%d", kind, len(list)))
		}
	}
}

func (m *member) snapshot() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.owned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// rebalance: a new group with the cooperative-sticky balancer; A alone owns every partition, then B
// joins: B must get partitions without A giving up the ones it keeps (A revokes exactly B's share).
func rebalance(a scenario.Args, seed kgo.Opt) (string, error) {
	g := a.Group + "-coop"
	start := func(m *member) (*kgo.Client, error) {
		m.owned = map[int32]bool{}
		return kgo.NewClient(seed, kgo.ConsumerGroup(g), kgo.ConsumeTopics(a.Topic),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.on("+", ps) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.on("-", ps) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.on("-", ps) }))
	}
	poll := func(c *kgo.Client, stop chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			c.PollFetches(cx)
			cancel()
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	ma, mb := &member{}, &member{}
	ca, err := start(ma)
	if err != nil {
		return "", err
	}
	defer ca.Close()
	wg.Add(1)
	go poll(ca, stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for len(ma.snapshot()) < a.Partitions {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("member A alone owns %v after 60 s", ma.snapshot())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cb, err := start(mb)
	if err != nil {
		return "", err
	}
	defer cb.Close()
	wg.Add(1)
	go poll(cb, stop, &wg)
	deadline = time.Now().Add(90 * time.Second)
	stable := 0
	for stable < 5 {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no stable split in 90 s: A %v B %v", ma.snapshot(), mb.snapshot())
		}
		time.Sleep(200 * time.Millisecond)
		sa, sb := ma.snapshot(), mb.snapshot()
		if scenario.IsSplit(sa, sb, a.Partitions) {
			stable++
		} else {
			stable = 0
		}
	}
	ma.mu.Lock()
	rev := append([]int32(nil), ma.revoked...)
	ev := append([]string(nil), ma.events...)
	ma.mu.Unlock()
	sort.Slice(rev, func(i, j int) bool { return rev[i] < rev[j] })
	sb := mb.snapshot()
	if fmt.Sprint(rev) != fmt.Sprint(sb) {
		return "", fmt.Errorf("A revoked %v but B owns %v (not incremental; A events %v)", rev, sb, ev)
	}
	return fmt.Sprintf("A %v + B %v, A revoked only %v %v", ma.snapshot(), sb, rev, ev), nil
}

// transactions: the matrix's transactions step (scenario.TxnTags). franz-go sends offsets only from a
// GroupTransactSession (the offsets of what the session polled in its group): the session joins the
// group Group-txn on Topic and polls one record, and PreTxnCommitFnContext sets the TxnOffsetCommit
// that End sends to Topic partition 0 offset 7 (the session's generation and member id stay). The
// session would commit the polled record's offset again in the third transaction: that commit is set
// to partition 0 offset 7 as well.
func transactions(a scenario.Args, seed kgo.Opt, adm *kadm.Client, ctx func(time.Duration) context.Context) (string, error) {
	txTopic, txGroup := a.Topic+"-txn", a.Group+"-txn"
	rs, err := adm.CreateTopics(ctx(30*time.Second), int32(a.Partitions), 1, nil, txTopic)
	if err != nil {
		return "", err
	}
	if r, err := rs.On(txTopic, nil); err != nil || r.Err != nil {
		return "", errors.Join(err, r.Err)
	}
	s, err := kgo.NewGroupTransactSession(seed, kgo.TransactionalID(a.Group+"-txn-"+client),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ConsumerGroup(txGroup), kgo.ConsumeTopics(a.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return "", err
	}
	defer s.Close()
	// Poll until the session has consumed something: End commits offsets only then.
	polled := 0
	deadline := time.Now().Add(60 * time.Second)
	for polled == 0 && time.Now().Before(deadline) {
		fs := s.PollRecords(ctx(time.Second), 1)
		fs.EachRecord(func(*kgo.Record) { polled++ })
	}
	if polled == 0 {
		return "", fmt.Errorf("the GroupTransactSession consumed nothing of %s in 60 s", a.Topic)
	}
	for t := range scenario.TxnTags {
		if err := s.Begin(); err != nil {
			return "", fmt.Errorf("transaction %d: begin: %w", t+1, err)
		}
		recs := make([]*kgo.Record, scenario.TxnCounts[t])
		for i := range recs {
			recs[i] = &kgo.Record{Topic: txTopic, Partition: int32(i % a.Partitions), Key: []byte(scenario.TxnKey(i)),
				Value: []byte(scenario.TxnValue(t, i, client))}
		}
		if err := s.ProduceSync(ctx(60*time.Second), recs...).FirstErr(); err != nil {
			return "", fmt.Errorf("transaction %d: produce: %w", t+1, err)
		}
		c := ctx(60 * time.Second)
		if t != 1 {
			c = kgo.PreTxnCommitFnContext(c, func(req *kmsg.TxnOffsetCommitRequest) error {
				p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch = 0, scenario.TxnOffset, -1
				tp := kmsg.NewTxnOffsetCommitRequestTopic()
				tp.Topic, tp.Partitions = a.Topic, []kmsg.TxnOffsetCommitRequestTopicPartition{p}
				req.Topics = []kmsg.TxnOffsetCommitRequestTopic{tp}
				return nil
			})
		}
		committed, err := s.End(c, kgo.TransactionEndTry(t != 1))
		if err != nil {
			return "", fmt.Errorf("transaction %d: end: %w", t+1, err)
		}
		if committed != (t != 1) {
			return "", fmt.Errorf("transaction %d: End answered committed=%v", t+1, committed)
		}
	}
	s.Close()
	read := func(view string, level kgo.IsolationLevel, want int) (int, error) {
		at := map[int32]kgo.Offset{}
		for p := 0; p < a.Partitions; p++ {
			at[int32(p)] = kgo.NewOffset().AtStart()
		}
		c, err := kgo.NewClient(seed, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{txTopic: at}),
			kgo.FetchIsolationLevel(level))
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return scenario.TxnReadUntil(view, want, func(d time.Duration) []scenario.TxnRecord {
			var out []scenario.TxnRecord
			c.PollFetches(ctx(d)).EachRecord(func(r *kgo.Record) {
				out = append(out, scenario.TxnRecord{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
			})
			return out
		}), nil
	}
	rc, err := read("committed", kgo.ReadCommitted(), 40)
	if err != nil {
		return "", err
	}
	ru, err := read("uncommitted", kgo.ReadUncommitted(), 60)
	if err != nil {
		return "", err
	}
	off, err := scenario.TxnWaitOffset(func() (int64, error) {
		os, err := adm.FetchOffsets(ctx(10*time.Second), txGroup)
		if err != nil {
			return -1, err
		}
		o, ok := os.Lookup(a.Topic, 0)
		if !ok {
			return -1, nil
		}
		return o.At, o.Err
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("3 transactions (GroupTransactSession: commit 30 + offsets, abort 20, commit 10 (+ the same offset)); "+
		"read_committed %d, read_uncommitted %d, group offset %d", rc, ru, off), nil
}
