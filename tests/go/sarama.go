package main

import (
	"context"
	"flag"
	"io"
	"log"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

func saramaConfig(version string) *sarama.Config {
	v, err := sarama.ParseKafkaVersion(version)
	if err != nil {
		usage("bad -version %q: %v", version, err)
	}
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = "tidelog-go-sarama"
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	return cfg
}

func saramaCodec(name string) sarama.CompressionCodec {
	switch name {
	case "none":
		return sarama.CompressionNone
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	case "zstd":
		return sarama.CompressionZSTD
	}
	usage("unknown codec %q", name)
	panic("unreachable")
}

func saramaAcks(name string) sarama.RequiredAcks {
	switch name {
	case "all":
		return sarama.WaitForAll
	case "leader":
		return sarama.WaitForLocal
	case "none":
		return sarama.NoResponse
	}
	usage("unknown acks %q", name)
	panic("unreachable")
}

func fromSarama(m *sarama.ConsumerMessage) record {
	headers := [][2]string{}
	for _, h := range m.Headers {
		headers = append(headers, [2]string{string(h.Key), string(h.Value)})
	}
	return record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: stringOf(m.Key),
		Value: stringOf(m.Value), Headers: headers, TimestampMs: m.Timestamp.UnixMilli()}
}

func saramaMessage(topic string, in record, index int) *sarama.ProducerMessage {
	msg := &sarama.ProducerMessage{Topic: topic, Partition: in.Partition, Metadata: index,
		Timestamp: millis(in.TimestampMs)}
	if in.Key != nil {
		msg.Key = sarama.ByteEncoder(bytesOf(in.Key))
	}
	if in.Value != nil {
		msg.Value = sarama.ByteEncoder(bytesOf(in.Value))
	}
	for _, h := range in.Headers {
		msg.Headers = append(msg.Headers, sarama.RecordHeader{Key: []byte(h[0]), Value: []byte(h[1])})
	}
	return msg
}

// saramaProduce produces stdin's records to their given partitions with a SyncProducer
// (SendMessages, one call for all records) or an AsyncProducer (-async), and prints each
// record's partition and offset (or error) in input order.
func saramaProduce(args []string) {
	fs := flag.NewFlagSet("sarama-produce", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	version := fs.String("version", "4.0.0", "Kafka version sarama assumes (Config.Version)")
	async := fs.Bool("async", false, "use an AsyncProducer")
	acks := fs.String("acks", "all", "all | leader | none")
	codec := fs.String("codec", "none", "none | gzip | snappy | lz4 | zstd")
	idempotent := fs.Bool("idempotent", false, "idempotent producer")
	fs.Parse(args)
	cfg := saramaConfig(*version)
	cfg.Producer.RequiredAcks = saramaAcks(*acks)
	cfg.Producer.Compression = saramaCodec(*codec)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Flush.Frequency = 10 * time.Millisecond
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	if *idempotent {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	input := readRecords()
	results := make([]produced, len(input))
	if !*async {
		producer, err := sarama.NewSyncProducer(splitList(*brokers), cfg)
		if err != nil {
			die("NewSyncProducer: %v", err)
		}
		msgs := make([]*sarama.ProducerMessage, len(input))
		for i, in := range input {
			msgs[i] = saramaMessage(*topic, in, i)
		}
		err = producer.SendMessages(msgs)
		failed := map[int]string{}
		if errs, ok := err.(sarama.ProducerErrors); ok {
			for _, e := range errs {
				failed[e.Msg.Metadata.(int)] = e.Err.Error()
			}
		} else if err != nil {
			die("SendMessages: %v", err)
		}
		for i, m := range msgs {
			results[i] = produced{Partition: m.Partition, Offset: m.Offset, Error: failed[i]}
		}
		if err := producer.Close(); err != nil {
			die("close: %v", err)
		}
	} else {
		producer, err := sarama.NewAsyncProducer(splitList(*brokers), cfg)
		if err != nil {
			die("NewAsyncProducer: %v", err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for m := range producer.Successes() {
				results[m.Metadata.(int)] = produced{Partition: m.Partition, Offset: m.Offset}
			}
		}()
		go func() {
			defer wg.Done()
			for e := range producer.Errors() {
				results[e.Msg.Metadata.(int)] = produced{Partition: e.Msg.Partition, Offset: -1, Error: e.Err.Error()}
			}
		}()
		for i, in := range input {
			producer.Input() <- saramaMessage(*topic, in, i)
		}
		producer.AsyncClose() // flushes what is buffered, then closes Successes and Errors
		wg.Wait()
	}
	for _, r := range results {
		emit(r)
	}
}

// saramaConsume reads -count records from one partition with a plain PartitionConsumer.
func saramaConsume(args []string) {
	fs := flag.NewFlagSet("sarama-consume", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	version := fs.String("version", "4.0.0", "Kafka version sarama assumes (Config.Version)")
	partition := fs.Int("partition", 0, "partition")
	offset := fs.String("offset", "oldest", "oldest | newest | an offset")
	count := fs.Int("count", 0, "records to read before exiting")
	timeout := fs.Duration("timeout", 30*time.Second, "give up (exit 1) after this long")
	fs.Parse(args)
	start := sarama.OffsetOldest
	switch *offset {
	case "oldest":
	case "newest":
		start = sarama.OffsetNewest
	default:
		n, err := strconv.ParseInt(*offset, 10, 64)
		if err != nil {
			usage("bad -offset %q", *offset)
		}
		start = n
	}
	cfg := saramaConfig(*version)
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	consumer, err := sarama.NewConsumer(splitList(*brokers), cfg)
	if err != nil {
		die("NewConsumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(*topic, int32(*partition), start)
	if err != nil {
		die("ConsumePartition: %v", err)
	}
	defer pc.Close()
	deadline := time.After(*timeout)
	for seen := 0; seen < *count; {
		select {
		case m := <-pc.Messages():
			emit(fromSarama(m))
			seen++
		case e := <-pc.Errors():
			// select picks at random among ready channels: the records sarama delivered before the
			// failing fetch may still wait in Messages(), so they are reported before the error.
			for drained := false; !drained && seen < *count; {
				select {
				case m := <-pc.Messages():
					emit(fromSarama(m))
					seen++
				default:
					drained = true
				}
			}
			die("consume %s[%d]: %v", e.Topic, e.Partition, e.Err)
		case <-deadline:
			die("read %d of %d records before the timeout", seen, *count)
		}
	}
	emit(map[string]any{"high_watermark": pc.HighWaterMarkOffset()})
}

// saramaGroup is one ConsumerGroup member. Each session's Setup reports the claims, Cleanup the
// loss of them (sarama's eager protocol revokes everything on a rebalance). Every record is marked;
// marked offsets are committed synchronously whenever a claim has nothing more buffered and in
// Cleanup, so nothing consumed is left uncommitted when partitions move. (Committing after every
// record would be slow: sarama serialises the commit behind the long-polling fetch on the
// coordinator's connection.)
type saramaHandler struct {
	name  string
	mu    sync.Mutex
	owned map[string]map[int32]bool
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.owned = map[string]map[int32]bool{}
	for t, ps := range s.Claims() {
		h.owned[t] = map[int32]bool{}
		for _, p := range ps {
			h.owned[t][p] = true
		}
	}
	emit(assignment(h.owned))
	return nil
}

func (h *saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit() // everything marked, before the partitions can move
	h.mu.Lock()
	defer h.mu.Unlock()
	h.owned = map[string]map[int32]bool{}
	emit(assignment(h.owned))
	return nil
}

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			out := fromSarama(m)
			emit(map[string]any{"event": "record", "member": h.name, "topic": out.Topic, "partition": out.Partition,
				"offset": out.Offset, "key": out.Key, "value": out.Value})
			s.MarkMessage(m, "")
			if len(claim.Messages()) == 0 { // commit what is marked before waiting for more
				s.Commit()
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func saramaGroup(args []string) {
	fs := flag.NewFlagSet("sarama-group", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap servers")
	group := fs.String("group", "", "group id")
	topics := fs.String("topic", "", "comma-separated topics")
	version := fs.String("version", "4.0.0", "Kafka version sarama assumes (Config.Version)")
	name := fs.String("name", "", "member name in the output")
	debug := fs.Bool("debug", false, "sarama's log on stderr")
	fs.Parse(args)
	if *debug {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	} else {
		sarama.Logger = log.New(io.Discard, "", 0)
	}
	cfg := saramaConfig(*version)
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cg, err := sarama.NewConsumerGroup(splitList(*brokers), *group, cfg)
	if err != nil {
		die("NewConsumerGroup: %v", err)
	}
	go func() {
		for e := range cg.Errors() {
			emit(map[string]any{"event": "error", "error": e.Error()})
		}
	}()
	stop := stopSignal()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	handler := &saramaHandler{name: *name}
	for ctx.Err() == nil {
		if err := cg.Consume(ctx, splitList(*topics), handler); err != nil && ctx.Err() == nil {
			emit(map[string]any{"event": "error", "error": err.Error()})
			time.Sleep(200 * time.Millisecond)
		}
	}
	if err := cg.Close(); err != nil { // leaves the group
		emit(map[string]any{"event": "error", "error": err.Error()})
	}
	emit(map[string]any{"event": "closed"})
}
