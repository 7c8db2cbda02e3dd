// Client-matrix driver for confluent-kafka-go v2 (cgo, on the librdkafka its module bundles).
//
//	confluentgo BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
//
// Prints STEP / REC / INFO lines (run_matrix.py checks them; ../../README.md). Every wait is bounded.
package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"sluice/compat/clients/scenario"
)

const client = "confluentgo"

func main() {
	a := scenario.Parse()
	_, lib := kafka.LibraryVersion()
	scenario.Printf("INFO confluent-kafka-go v2.11.1, librdkafka %s", lib)
	base := time.Now().Add(-time.Minute).UnixMilli()
	reads := &scenario.Reads{}
	topic := a.Topic
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": a.Bootstrap})
	if err != nil {
		scenario.Printf("ERROR admin: %v", err)
		return
	}
	defer adm.Close()
	ctx := func() context.Context {
		// the timer releases the context's resources a second after its deadline
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		time.AfterFunc(30*time.Second+time.Second, cancel)
		return c
	}

	scenario.Step("create", func() (string, error) {
		rs, err := adm.CreateTopics(ctx(), []kafka.TopicSpecification{{Topic: topic, NumPartitions: a.Partitions, ReplicationFactor: 1}})
		if err == nil && rs[0].Error.Code() != kafka.ErrNoError {
			err = rs[0].Error
		}
		return fmt.Sprintf("CreateTopics %d partitions", a.Partitions), err
	})

	scenario.Step("produce", func() (string, error) {
		p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": a.Bootstrap, "acks": "all",
			"enable.idempotence": true, "linger.ms": 5})
		if err != nil {
			return "", err
		}
		defer p.Close()
		dr := make(chan kafka.Event, a.Records)
		for i := 0; i < a.Records; i++ {
			var hs []kafka.Header
			for _, h := range scenario.Headers(i, client) {
				hs = append(hs, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
			}
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
				Key: []byte(scenario.Key(i)), Value: []byte(scenario.Value(i, client)), Headers: hs,
				Timestamp: time.UnixMilli(base + int64(i))}
			if err := p.Produce(m, dr); err != nil {
				return "", err
			}
		}
		for i := 0; i < a.Records; i++ {
			select {
			case e := <-dr:
				if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
					return "", m.TopicPartition.Error
				}
			case <-time.After(60 * time.Second):
				return "", fmt.Errorf("%d of %d delivery reports in 60 s", i, a.Records)
			}
		}
		return fmt.Sprintf("%d records, acks=all, enable.idempotence=true", a.Records), nil
	})

	consumer := func(group string, extra kafka.ConfigMap) (*kafka.Consumer, error) {
		cm := kafka.ConfigMap{"bootstrap.servers": a.Bootstrap, "group.id": group, "auto.offset.reset": "earliest",
			"enable.auto.commit": false}
		for k, v := range extra {
			cm[k] = v
		}
		return kafka.NewConsumer(&cm)
	}

	phase := func(n, want int) (string, error) {
		c, err := consumer(a.Group, nil)
		if err != nil {
			return "", err
		}
		defer c.Close()
		if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
			return "", err
		}
		got := 0
		commit := map[int32]kafka.Offset{}
		deadline := time.Now().Add(60 * time.Second)
		for got < want && time.Now().Before(deadline) {
			switch e := c.Poll(200).(type) {
			case *kafka.Message:
				got++
				var hs []scenario.Header
				for _, h := range e.Headers {
					hs = append(hs, scenario.Header{Key: h.Key, Value: string(h.Value)})
				}
				reads.Rec(n, e.TopicPartition.Partition, int64(e.TopicPartition.Offset), string(e.Key), string(e.Value), hs)
				commit[e.TopicPartition.Partition] = e.TopicPartition.Offset + 1
			case kafka.Error:
				if e.IsFatal() {
					return "", e
				}
			}
		}
		var tps []kafka.TopicPartition
		for p, o := range commit {
			tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: o})
		}
		if len(tps) > 0 {
			if _, err := c.CommitOffsets(tps); err != nil {
				return "", fmt.Errorf("commit: %w", err)
			}
		}
		return scenario.PhaseDone(got, want)
	}
	scenario.Step("consume", func() (string, error) { return phase(1, a.First) })
	scenario.Step("resume", func() (string, error) { return phase(2, a.Records-a.First) })

	scenario.Step("offsets_for_times", func() (string, error) {
		c, err := consumer(a.Group+"-times", nil)
		if err != nil {
			return "", err
		}
		defer c.Close()
		var q []kafka.TopicPartition
		for p := 0; p < a.Partitions; p++ {
			q = append(q, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: kafka.Offset(base + int64(a.First))})
		}
		got, err := c.OffsetsForTimes(q, 30000)
		if err != nil {
			return "", err
		}
		d := ""
		for _, tp := range got {
			o := int64(tp.Offset)
			if tp.Error != nil {
				return "", tp.Error
			}
			if err := reads.CheckTimeOffset(tp.Partition, a.First, o); err != nil {
				return "", err
			}
			d += fmt.Sprintf("%d->%d ", tp.Partition, o)
		}
		return d, nil
	})

	scenario.Step("rebalance", func() (string, error) {
		g := a.Group + "-coop"
		conf := kafka.ConfigMap{"partition.assignment.strategy": "cooperative-sticky"}
		ca, err := consumer(g, conf)
		if err != nil {
			return "", err
		}
		defer ca.Close()
		cb, err := consumer(g, conf)
		if err != nil {
			return "", err
		}
		defer cb.Close()
		var revoked []int
		ca.SubscribeTopics([]string{topic}, func(c *kafka.Consumer, e kafka.Event) error {
			if r, ok := e.(kafka.RevokedPartitions); ok {
				for _, tp := range r.Partitions {
					revoked = append(revoked, int(tp.Partition))
				}
			}
			return nil
		})
		owned := func(c *kafka.Consumer) []int {
			ps, _ := c.Assignment()
			var r []int
			for _, tp := range ps {
				r = append(r, int(tp.Partition))
			}
			sort.Ints(r)
			return r
		}
		deadline := time.Now().Add(60 * time.Second)
		for len(owned(ca)) < a.Partitions {
			if time.Now().After(deadline) {
				return "", fmt.Errorf("member A alone got %v in 60 s", owned(ca))
			}
			ca.Poll(200)
		}
		cb.SubscribeTopics([]string{topic}, nil)
		deadline = time.Now().Add(90 * time.Second)
		stable := 0
		var sa, sb []int
		for stable < 5 {
			if time.Now().After(deadline) {
				return "", fmt.Errorf("no stable split in 90 s: A %v B %v", owned(ca), owned(cb))
			}
			ca.Poll(100)
			cb.Poll(100)
			sa, sb = owned(ca), owned(cb)
			if scenario.IsSplit(sa, sb, a.Partitions) {
				stable++
			} else {
				stable = 0
			}
		}
		sort.Ints(revoked)
		if fmt.Sprint(revoked) != fmt.Sprint(sb) {
			return "", fmt.Errorf("A revoked %v but B owns %v (not incremental)", revoked, sb)
		}
		return fmt.Sprintf("A %v + B %v, A revoked only %v", sa, sb, revoked), nil
	})

	scenario.Step("describe", func() (string, error) {
		r, err := adm.DescribeTopics(ctx(), kafka.NewTopicCollectionOfTopicNames([]string{topic}))
		if err != nil {
			return "", err
		}
		td := r.TopicDescriptions[0]
		if td.Error.Code() != kafka.ErrNoError {
			return "", td.Error
		}
		if len(td.Partitions) != a.Partitions {
			return "", fmt.Errorf("%d partitions described, expected %d", len(td.Partitions), a.Partitions)
		}
		for _, p := range td.Partitions {
			if p.Leader == nil {
				return "", fmt.Errorf("partition %d has no leader", p.Partition)
			}
		}
		return fmt.Sprintf("DescribeTopics: %d partitions with leaders", a.Partitions), nil
	})

	scenario.Step("delete_records", func() (string, error) {
		r, err := adm.DeleteRecords(ctx(), []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 10}})
		if err != nil {
			return "", err
		}
		res := r.DeleteRecordsResults[0]
		if res.TopicPartition.Error != nil {
			return "", res.TopicPartition.Error
		}
		if res.DeletedRecords == nil || res.DeletedRecords.LowWatermark != 10 {
			return "", fmt.Errorf("low watermark %v after deleting before 10", res.DeletedRecords)
		}
		c, err := consumer(a.Group+"-wm", nil)
		if err != nil {
			return "", err
		}
		defer c.Close()
		lo, _, err := c.QueryWatermarkOffsets(topic, 0, 30000)
		if err != nil {
			return "", err
		}
		if lo != 10 {
			return "", fmt.Errorf("earliest offset %d after DeleteRecords(10)", lo)
		}
		return "partition 0 low watermark 10, earliest 10", nil
	})

	scenario.Step("transactions", func() (string, error) { return transactions(a, adm, ctx) })

	scenario.Step("delete", func() (string, error) {
		rs, err := adm.DeleteTopics(ctx(), []string{topic})
		if err == nil && rs[0].Error.Code() != kafka.ErrNoError {
			err = rs[0].Error
		}
		if err != nil {
			return "", err
		}
		return scenario.WaitTopicGone(func() (bool, error) {
			md, err := adm.GetMetadata(nil, true, 10000)
			if err != nil {
				return false, err
			}
			_, ok := md.Topics[topic]
			return ok, nil
		})
	})
	scenario.Printf("DONE")
}

// transactions: the matrix's transactions step (scenario.TxnTags) with a transactional Producer; the
// group's offset goes through SendOffsetsToTransaction with the metadata of a consumer of the group
// that never joins it (generation -1), as a consume-transform-produce loop would pass its own.
func transactions(a scenario.Args, adm *kafka.AdminClient, ctx func() context.Context) (string, error) {
	txTopic, txGroup := a.Topic+"-txn", a.Group+"-txn"
	rs, err := adm.CreateTopics(ctx(), []kafka.TopicSpecification{{Topic: txTopic, NumPartitions: a.Partitions, ReplicationFactor: 1}})
	if err == nil && rs[0].Error.Code() != kafka.ErrNoError {
		err = rs[0].Error
	}
	if err != nil {
		return "", err
	}
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": a.Bootstrap, "transactional.id": a.Group + "-txn-" + client,
		"acks": "all", "linger.ms": 5})
	if err != nil {
		return "", err
	}
	defer p.Close()
	go func() { // delivery reports are checked by Flush's count; drain the rest
		for range p.Events() {
		}
	}()
	gc, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": a.Bootstrap, "group.id": txGroup})
	if err != nil {
		return "", err
	}
	defer gc.Close()
	if err := p.InitTransactions(ctx()); err != nil {
		return "", fmt.Errorf("InitTransactions: %w", err)
	}
	for t := range scenario.TxnTags {
		if err := p.BeginTransaction(); err != nil {
			return "", fmt.Errorf("transaction %d: begin: %w", t+1, err)
		}
		dr := make(chan kafka.Event, scenario.TxnCounts[t])
		for i := 0; i < scenario.TxnCounts[t]; i++ {
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &txTopic, Partition: int32(i % a.Partitions)},
				Key: []byte(scenario.TxnKey(i)), Value: []byte(scenario.TxnValue(t, i, client))}
			if err := p.Produce(m, dr); err != nil {
				return "", fmt.Errorf("transaction %d: produce: %w", t+1, err)
			}
		}
		for i := 0; i < scenario.TxnCounts[t]; i++ { // every record delivered before the commit or abort
			select {
			case e := <-dr:
				if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
					return "", fmt.Errorf("transaction %d: delivery: %w", t+1, m.TopicPartition.Error)
				}
			case <-time.After(60 * time.Second):
				return "", fmt.Errorf("transaction %d: %d of %d delivery reports in 60 s", t+1, i, scenario.TxnCounts[t])
			}
		}
		if t == 0 {
			md, err := gc.GetConsumerGroupMetadata()
			if err != nil {
				return "", err
			}
			offs := []kafka.TopicPartition{{Topic: &a.Topic, Partition: 0, Offset: scenario.TxnOffset}}
			if err := p.SendOffsetsToTransaction(ctx(), offs, md); err != nil {
				return "", fmt.Errorf("transaction 1: SendOffsetsToTransaction: %w", err)
			}
		}
		if t == 1 {
			err = p.AbortTransaction(ctx())
		} else {
			err = p.CommitTransaction(ctx())
		}
		if err != nil {
			return "", fmt.Errorf("transaction %d: end: %w", t+1, err)
		}
	}
	read := func(view string, want int) (int, error) {
		level := "read_committed"
		if view == "uncommitted" {
			level = "read_uncommitted"
		}
		c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": a.Bootstrap, "group.id": txGroup + "-" + view,
			"isolation.level": level, "enable.auto.commit": false})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		var tps []kafka.TopicPartition
		for part := 0; part < a.Partitions; part++ {
			tps = append(tps, kafka.TopicPartition{Topic: &txTopic, Partition: int32(part), Offset: kafka.OffsetBeginning})
		}
		if err := c.Assign(tps); err != nil {
			return 0, err
		}
		return scenario.TxnReadUntil(view, want, func(d time.Duration) []scenario.TxnRecord {
			if m, ok := c.Poll(int(d.Milliseconds())).(*kafka.Message); ok {
				return []scenario.TxnRecord{{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset),
					Key: string(m.Key), Value: string(m.Value)}}
			}
			return nil
		}), nil
	}
	rc, err := read("committed", 40)
	if err != nil {
		return "", err
	}
	ru, err := read("uncommitted", 60)
	if err != nil {
		return "", err
	}
	off, err := scenario.TxnWaitOffset(func() (int64, error) {
		r, err := gc.Committed([]kafka.TopicPartition{{Topic: &a.Topic, Partition: 0}}, 10000)
		if err != nil {
			return -1, err
		}
		if r[0].Error != nil {
			return -1, r[0].Error
		}
		return int64(r[0].Offset), nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("3 transactions (commit 30 + SendOffsetsToTransaction, abort 20, commit 10); read_committed %d, "+
		"read_uncommitted %d, group offset %d", rc, ru, off), nil
}
