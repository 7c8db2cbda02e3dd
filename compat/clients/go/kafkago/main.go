// Client-matrix driver for segmentio/kafka-go (Client for admin requests, Writer, Reader with a
// GroupID). kafka-go has no idempotent producer, no cooperative rebalancing, no DeleteRecords API and
// no transactional producer: those steps say so (SKIP, or PASS without idempotence).
//
//	kafkago BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
//
// Prints STEP / REC / INFO lines (run_matrix.py checks them; ../../README.md). Every wait is bounded.
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"sluice/compat/clients/scenario"
)

const client = "kafkago"

func main() {
	a := scenario.Parse()
	scenario.Printf("INFO segmentio/kafka-go v0.4.51")
	brokers := strings.Split(a.Bootstrap, ",")
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	base := time.Now().Add(-time.Minute).UnixMilli()
	reads := &scenario.Reads{}
	ctx := func(d time.Duration) context.Context {
		// the timer releases the context's resources a second after its deadline
		c, cancel := context.WithTimeout(context.Background(), d)
		time.AfterFunc(d+time.Second, cancel)
		return c
	}

	scenario.Step("create", func() (string, error) {
		r, err := cl.CreateTopics(ctx(30*time.Second), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
			{Topic: a.Topic, NumPartitions: a.Partitions, ReplicationFactor: 1}}})
		if err == nil {
			err = r.Errors[a.Topic]
		}
		return fmt.Sprintf("CreateTopics %d partitions", a.Partitions), err
	})

	scenario.Step("produce", func() (string, error) {
		w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: a.Topic, Balancer: &kafka.Hash{},
			RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchSize: 200}
		defer w.Close()
		msgs := make([]kafka.Message, a.Records)
		for i := range msgs {
			var hs []kafka.Header
			for _, h := range scenario.Headers(i, client) {
				hs = append(hs, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
			}
			msgs[i] = kafka.Message{Key: []byte(scenario.Key(i)), Value: []byte(scenario.Value(i, client)), Headers: hs,
				Time: time.UnixMilli(base + int64(i))}
		}
		if err := w.WriteMessages(ctx(60*time.Second), msgs...); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d records, acks=all (kafka-go has no idempotent producer)", a.Records), nil
	})

	phase := func(n, want int) (string, error) {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: a.Group, Topic: a.Topic,
			StartOffset: kafka.FirstOffset, CommitInterval: 0, MaxWait: 500 * time.Millisecond})
		defer r.Close()
		got := 0
		var taken []kafka.Message
		c := ctx(60 * time.Second)
		for got < want {
			m, err := r.FetchMessage(c)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					break
				}
				return "", err
			}
			got++
			var hs []scenario.Header
			for _, h := range m.Headers {
				hs = append(hs, scenario.Header{Key: h.Key, Value: string(h.Value)})
			}
			reads.Rec(n, int32(m.Partition), m.Offset, string(m.Key), string(m.Value), hs)
			taken = append(taken, m)
		}
		if len(taken) > 0 {
			if err := r.CommitMessages(ctx(30*time.Second), taken...); err != nil {
				return "", fmt.Errorf("commit: %w", err)
			}
		}
		return scenario.PhaseDone(got, want)
	}
	scenario.Step("consume", func() (string, error) { return phase(1, a.First) })
	scenario.Step("resume", func() (string, error) { return phase(2, a.Records-a.First) })

	scenario.Step("offsets_for_times", func() (string, error) {
		var q []kafka.OffsetRequest
		for p := 0; p < a.Partitions; p++ {
			q = append(q, kafka.TimeOffsetOf(p, time.UnixMilli(base+int64(a.First))))
		}
		r, err := cl.ListOffsets(ctx(30*time.Second), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{a.Topic: q}})
		if err != nil {
			return "", err
		}
		d := ""
		for _, po := range r.Topics[a.Topic] {
			if po.Error != nil {
				return "", fmt.Errorf("partition %d: %w", po.Partition, po.Error)
			}
			o := int64(-1)
			for off := range po.Offsets {
				o = off
			}
			if err := reads.CheckTimeOffset(int32(po.Partition), a.First, o); err != nil {
				return "", err
			}
			d += fmt.Sprintf("%d->%d ", po.Partition, o)
		}
		if len(r.Topics[a.Topic]) != a.Partitions {
			return "", fmt.Errorf("%d partitions answered", len(r.Topics[a.Topic]))
		}
		return d, nil
	})

	scenario.Skip("rebalance", "kafka-go has no cooperative rebalancing (eager balancers only)")

	scenario.Step("describe", func() (string, error) {
		md, err := cl.Metadata(ctx(30*time.Second), &kafka.MetadataRequest{Topics: []string{a.Topic}})
		if err != nil {
			return "", err
		}
		if len(md.Topics) != 1 || md.Topics[0].Error != nil {
			return "", fmt.Errorf("topic metadata %+v", md.Topics)
		}
		if len(md.Topics[0].Partitions) != a.Partitions {
			return "", fmt.Errorf("%d partitions described, expected %d", len(md.Topics[0].Partitions), a.Partitions)
		}
		return fmt.Sprintf("Metadata: %d partitions", a.Partitions), nil
	})

	scenario.Skip("delete_records", "kafka-go has no DeleteRecords API")

	scenario.Skip("transactions", "kafka-go has no transactional producer (its Writer cannot write transactional batches; Client only has the raw InitProducerID/AddPartitionsToTxn/EndTxn requests)")

	scenario.Step("delete", func() (string, error) {
		r, err := cl.DeleteTopics(ctx(30*time.Second), &kafka.DeleteTopicsRequest{Topics: []string{a.Topic}})
		if err == nil {
			err = r.Errors[a.Topic]
		}
		if err != nil {
			return "", err
		}
		return scenario.WaitTopicGone(func() (bool, error) {
			md, err := cl.Metadata(ctx(10*time.Second), &kafka.MetadataRequest{})
			if err != nil {
				return false, err
			}
			for _, t := range md.Topics {
				if t.Name == a.Topic {
					return true, nil
				}
			}
			return false, nil
		})
	})
	scenario.Printf("DONE")
}
