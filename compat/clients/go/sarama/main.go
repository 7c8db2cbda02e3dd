// Client-matrix driver for IBM/sarama (ClusterAdmin, SyncProducer, ConsumerGroup).
//
//	sarama BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
//
// Prints STEP / REC / INFO lines (run_matrix.py checks them; ../../README.md). Every wait is bounded.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/clients/scenario"
)

const client = "sarama"

func version() string { return scenario.ModuleVersion("github.com/IBM/sarama", "sarama") }

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V4_0_0_0 // the protocol versions of Kafka 4.0 (4.x removed the oldest ones)
	c.ClientID = "matrix-sarama"
	c.Net.DialTimeout = 10 * time.Second
	c.Admin.Timeout = 30 * time.Second
	return c
}

func main() {
	a := scenario.Parse()
	scenario.Printf("INFO %s", version())
	if os.Getenv("MATRIX_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags)
	}
	brokers := strings.Split(a.Bootstrap, ",")
	base := time.Now().Add(-time.Minute).UnixMilli()
	reads := &scenario.Reads{}
	adm, err := sarama.NewClusterAdmin(brokers, config())
	if err != nil {
		scenario.Printf("ERROR admin: %v", err)
		return
	}
	defer adm.Close()

	scenario.Step("create", func() (string, error) {
		err := adm.CreateTopic(a.Topic, &sarama.TopicDetail{NumPartitions: int32(a.Partitions), ReplicationFactor: 1}, false)
		return fmt.Sprintf("CreateTopics %d partitions", a.Partitions), err
	})

	scenario.Step("produce", func() (string, error) {
		c := config()
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
		c.Producer.Retry.Max = 5
		c.Producer.Return.Successes = true
		c.Producer.Partitioner = sarama.NewHashPartitioner
		p, err := sarama.NewSyncProducer(brokers, c)
		if err != nil {
			return "", err
		}
		defer p.Close()
		msgs := make([]*sarama.ProducerMessage, a.Records)
		for i := range msgs {
			var hs []sarama.RecordHeader
			for _, h := range scenario.Headers(i, client) {
				hs = append(hs, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
			}
			msgs[i] = &sarama.ProducerMessage{Topic: a.Topic, Key: sarama.StringEncoder(scenario.Key(i)),
				Value: sarama.StringEncoder(scenario.Value(i, client)), Headers: hs, Timestamp: time.UnixMilli(base + int64(i))}
		}
		if err := p.SendMessages(msgs); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d records, acks=all, idempotent", a.Records), nil
	})

	phase := func(n, want int) (string, error) {
		c := config()
		c.Consumer.Offsets.Initial = sarama.OffsetOldest
		c.Consumer.Offsets.AutoCommit.Enable = false
		g, err := sarama.NewConsumerGroup(brokers, a.Group, c)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		h := &phaseHandler{want: want, phase: n, reads: reads, done: cancel}
		var consumeErr error
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{a.Topic}, h); err != nil && ctx.Err() == nil {
				consumeErr = err
				break
			}
		}
		if err := g.Close(); err != nil && consumeErr == nil {
			consumeErr = err
		}
		h.mu.Lock()
		got, commitErr := h.got, h.commitErr
		h.mu.Unlock()
		if consumeErr != nil {
			return "", consumeErr
		}
		if commitErr != nil {
			return "", fmt.Errorf("commit: %w", commitErr)
		}
		return scenario.PhaseDone(got, want)
	}
	scenario.Step("consume", func() (string, error) { return phase(1, a.First) })
	scenario.Step("resume", func() (string, error) { return phase(2, a.Records-a.First) })

	scenario.Step("offsets_for_times", func() (string, error) {
		cl, err := sarama.NewClient(brokers, config())
		if err != nil {
			return "", err
		}
		defer cl.Close()
		d := ""
		for p := int32(0); p < int32(a.Partitions); p++ {
			o, err := cl.GetOffset(a.Topic, p, base+int64(a.First))
			if err != nil {
				return "", fmt.Errorf("partition %d: %w", p, err)
			}
			if err := reads.CheckTimeOffset(p, a.First, o); err != nil {
				return "", err
			}
			d += fmt.Sprintf("%d->%d ", p, o)
		}
		return d, nil
	})

	scenario.Step("rebalance", func() (string, error) { return rebalance(a, brokers) })

	scenario.Step("describe", func() (string, error) {
		md, err := adm.DescribeTopics([]string{a.Topic})
		if err != nil {
			return "", err
		}
		if len(md) != 1 || md[0].Err != sarama.ErrNoError {
			return "", fmt.Errorf("topic metadata %v", md)
		}
		if len(md[0].Partitions) != a.Partitions {
			return "", fmt.Errorf("%d partitions described, expected %d", len(md[0].Partitions), a.Partitions)
		}
		for _, p := range md[0].Partitions {
			if p.Err != sarama.ErrNoError || p.Leader < 0 {
				return "", fmt.Errorf("partition %d: leader %d, %v", p.ID, p.Leader, p.Err)
			}
		}
		return fmt.Sprintf("%d partitions with leaders", a.Partitions), nil
	})

	scenario.Step("delete_records", func() (string, error) {
		if err := adm.DeleteRecords(a.Topic, map[int32]int64{0: 10}); err != nil {
			return "", err
		}
		cl, err := sarama.NewClient(brokers, config())
		if err != nil {
			return "", err
		}
		defer cl.Close()
		o, err := cl.GetOffset(a.Topic, 0, sarama.OffsetOldest)
		if err != nil {
			return "", err
		}
		if o != 10 {
			return "", fmt.Errorf("earliest offset %d after DeleteRecords(10)", o)
		}
		return "partition 0 deleted before 10, earliest 10 (sarama returns no low watermark)", nil
	})

	scenario.Step("transactions", func() (string, error) { return transactions(a, brokers, adm) })

	scenario.Step("delete", func() (string, error) {
		if err := adm.DeleteTopic(a.Topic); err != nil {
			return "", err
		}
		return scenario.WaitTopicGone(func() (bool, error) {
			ts, err := adm.ListTopics()
			_, ok := ts[a.Topic]
			return err == nil && ok, err
		})
	})
	scenario.Printf("DONE")
}

// phaseHandler takes exactly `want` records (a prefix of each partition), marks them, and commits
// synchronously when the session ends.
type phaseHandler struct {
	mu        sync.Mutex
	want, got int
	phase     int
	reads     *scenario.Reads
	done      context.CancelFunc
	commitErr error
}

func (h *phaseHandler) Setup(sarama.ConsumerGroupSession) error { return nil }

func (h *phaseHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (h *phaseHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		if h.got >= h.want {
			h.mu.Unlock()
			return nil
		}
		h.got++
		var hs []scenario.Header
		for _, x := range m.Headers {
			hs = append(hs, scenario.Header{Key: string(x.Key), Value: string(x.Value)})
		}
		h.reads.Rec(h.phase, m.Partition, m.Offset, string(m.Key), string(m.Value), hs)
		s.MarkMessage(m, "")
		full := h.got >= h.want
		h.mu.Unlock()
		if full {
			h.done()
			return nil
		}
	}
	return nil
}

// memberHandler records each generation's claims of one member of the cooperative group.
type memberHandler struct {
	mu       sync.Mutex
	owned    map[int32]bool
	revoked  []int32
	stopping bool
}

func (h *memberHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *memberHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim runs while the member owns the partition: its start is an assignment, its end (the
// claim's channel closed) a revocation.
func (h *memberHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	h.mu.Lock()
	if h.owned == nil {
		h.owned = map[int32]bool{}
	}
	h.owned[c.Partition()] = true
	h.mu.Unlock()
	for range c.Messages() {
	}
	h.mu.Lock()
	if !h.stopping {
		delete(h.owned, c.Partition())
		h.revoked = append(h.revoked, c.Partition())
	}
	h.mu.Unlock()
	return nil
}
func (h *memberHandler) snapshot() []int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ps []int32
	for p := range h.owned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// rebalance: a new group with the cooperative-sticky strategy; A alone owns every partition, then B
// joins: B must get partitions without A giving up the ones it keeps (A revokes exactly B's share).
func rebalance(a scenario.Args, brokers []string) (string, error) {
	gid := a.Group + "-coop"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	start := func(h *memberHandler) (sarama.ConsumerGroup, error) {
		c := config()
		c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyCooperativeSticky()}
		c.Consumer.Offsets.AutoCommit.Enable = false
		g, err := sarama.NewConsumerGroup(brokers, gid, c)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{a.Topic}, h); err != nil {
					fmt.Fprintf(os.Stderr, "consume: %v\n", err)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
		return g, nil
	}
	ha, hb := &memberHandler{}, &memberHandler{}
	ga, err := start(ha)
	if err != nil {
		return "", err
	}
	defer func() { cancel(); ga.Close(); wg.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for len(ha.snapshot()) < a.Partitions {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("member A alone owns %v after 60 s", ha.snapshot())
		}
		time.Sleep(100 * time.Millisecond)
	}
	gb, err := start(hb)
	if err != nil {
		return "", err
	}
	defer gb.Close()
	deadline = time.Now().Add(90 * time.Second)
	stable := 0
	var sa, sb []int32
	for stable < 5 {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no stable split in 90 s: A %v B %v", ha.snapshot(), hb.snapshot())
		}
		time.Sleep(200 * time.Millisecond)
		sa, sb = ha.snapshot(), hb.snapshot()
		if scenario.IsSplit(sa, sb, a.Partitions) {
			stable++
		} else {
			stable = 0
		}
	}
	ha.mu.Lock()
	rev := append([]int32(nil), ha.revoked...)
	ha.stopping = true
	ha.mu.Unlock()
	hb.mu.Lock()
	hb.stopping = true
	hb.mu.Unlock()
	sort.Slice(rev, func(i, j int) bool { return rev[i] < rev[j] })
	if fmt.Sprint(rev) != fmt.Sprint(sb) {
		return "", fmt.Errorf("A gave up %v but B owns %v (not incremental)", rev, sb)
	}
	return fmt.Sprintf("A %v + B %v, A gave up only %v", sa, sb, rev), nil
}

// transactions: the matrix's transactions step (scenario.TxnTags) with a transactional SyncProducer
// (Producer.Transaction.ID; AddOffsetsToTxn for the group's offset) and two partition consumers.
func transactions(a scenario.Args, brokers []string, adm sarama.ClusterAdmin) (string, error) {
	txTopic, txGroup := a.Topic+"-txn", a.Group+"-txn"
	if err := adm.CreateTopic(txTopic, &sarama.TopicDetail{NumPartitions: int32(a.Partitions), ReplicationFactor: 1}, false); err != nil {
		return "", err
	}
	c := config()
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Producer.Transaction.ID = a.Group + "-txn-" + client
	c.Net.MaxOpenRequests = 1
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(brokers, c)
	if err != nil {
		return "", err
	}
	defer p.Close()
	for t := range scenario.TxnTags {
		if err := p.BeginTxn(); err != nil {
			return "", fmt.Errorf("transaction %d: begin: %w", t+1, err)
		}
		msgs := make([]*sarama.ProducerMessage, scenario.TxnCounts[t])
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: txTopic, Partition: int32(i % a.Partitions),
				Key: sarama.StringEncoder(scenario.TxnKey(i)), Value: sarama.StringEncoder(scenario.TxnValue(t, i, client))}
		}
		if err := p.SendMessages(msgs); err != nil {
			return "", fmt.Errorf("transaction %d: produce: %w", t+1, err)
		}
		if t == 0 {
			offs := map[string][]*sarama.PartitionOffsetMetadata{a.Topic: {{Partition: 0, Offset: scenario.TxnOffset, LeaderEpoch: -1}}}
			if err := p.AddOffsetsToTxn(offs, txGroup); err != nil {
				return "", fmt.Errorf("transaction 1: AddOffsetsToTxn: %w", err)
			}
		}
		if t == 1 {
			err = p.AbortTxn()
		} else {
			err = p.CommitTxn()
		}
		if err != nil {
			return "", fmt.Errorf("transaction %d: end: %w", t+1, err)
		}
	}
	read := func(view string, level sarama.IsolationLevel, want int) (int, error) {
		cc := config()
		cc.Consumer.IsolationLevel = level
		cc.Consumer.MaxWaitTime = 200 * time.Millisecond
		cons, err := sarama.NewConsumer(brokers, cc)
		if err != nil {
			return 0, err
		}
		defer cons.Close()
		recs := make(chan *sarama.ConsumerMessage, 100)
		for part := 0; part < a.Partitions; part++ {
			pc, err := cons.ConsumePartition(txTopic, int32(part), sarama.OffsetOldest)
			if err != nil {
				return 0, err
			}
			defer pc.AsyncClose()
			go func() {
				for m := range pc.Messages() {
					recs <- m
				}
			}()
		}
		return scenario.TxnReadUntil(view, want, func(d time.Duration) []scenario.TxnRecord {
			var out []scenario.TxnRecord
			timer := time.NewTimer(d)
			defer timer.Stop()
			for {
				select {
				case m := <-recs:
					out = append(out, scenario.TxnRecord{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)})
				case <-timer.C:
					return out
				}
			}
		}), nil
	}
	rc, err := read("committed", sarama.ReadCommitted, 40)
	if err != nil {
		return "", err
	}
	ru, err := read("uncommitted", sarama.ReadUncommitted, 60)
	if err != nil {
		return "", err
	}
	off, err := scenario.TxnWaitOffset(func() (int64, error) {
		r, err := adm.ListConsumerGroupOffsets(txGroup, map[string][]int32{a.Topic: {0}})
		if err != nil {
			return -1, err
		}
		b := r.GetBlock(a.Topic, 0)
		if b == nil {
			return -1, nil
		}
		if !errors.Is(b.Err, sarama.ErrNoError) {
			return b.Offset, b.Err
		}
		return b.Offset, nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("3 transactions (commit 30 + AddOffsetsToTxn, abort 20, commit 10); read_committed %d, "+
		"read_uncommitted %d, group offset %d", rc, ru, off), nil
}
