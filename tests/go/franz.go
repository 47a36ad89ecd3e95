package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "none":
		return kgo.NoCompression()
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	usage("unknown codec %q", name)
	panic("unreachable")
}

func franzAcks(name string) kgo.Acks {
	switch name {
	case "all":
		return kgo.AllISRAcks()
	case "leader":
		return kgo.LeaderAck()
	case "none":
		return kgo.NoAck()
	}
	usage("unknown acks %q", name)
	panic("unreachable")
}

// Flags every franz subcommand has: -log (franz-go's log on stderr) and -max-version (pin the
// request versions to those of a Kafka release, "0.11.0", "2.4" ..., as franz-go's kversion knows them).
var (
	franzLogLevel    = kgo.LogLevelNone
	franzMaxVersions *kversion.Versions
)

func commonFlags(fs *flag.FlagSet) {
	fs.Func("log", "franz-go log level on stderr: error | warn | info | debug", func(s string) error {
		levels := map[string]kgo.LogLevel{"error": kgo.LogLevelError, "warn": kgo.LogLevelWarn,
			"info": kgo.LogLevelInfo, "debug": kgo.LogLevelDebug}
		level, ok := levels[s]
		if !ok {
			return fmt.Errorf("unknown log level %q", s)
		}
		franzLogLevel = level
		return nil
	})
	fs.Func("max-version", "use at most the request versions of this Kafka release", func(s string) error {
		if franzMaxVersions = kversion.FromString(s); franzMaxVersions == nil {
			return fmt.Errorf("unknown Kafka version %q", s)
		}
		return nil
	})
}

// franzClient makes a client with the subcommand's options. MetadataMinAge is cut from 5 s to 10 ms:
// franz-go waits that long between metadata refreshes (a retried produce waits for one) and kadm
// answers ListTopics from metadata younger than that; a local broker makes both pointless.
func franzClient(opts ...kgo.Opt) *kgo.Client {
	opts = append(opts, kgo.MetadataMinAge(10*time.Millisecond))
	if franzMaxVersions != nil {
		opts = append(opts, kgo.MaxVersions(franzMaxVersions))
	}
	if franzLogLevel != kgo.LogLevelNone {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, franzLogLevel, nil)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		die("kgo.NewClient: %v", err)
	}
	return cl
}

func fromFranz(r *kgo.Record) record {
	headers := [][2]string{}
	for _, h := range r.Headers {
		headers = append(headers, [2]string{h.Key, string(h.Value)})
	}
	return record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: stringOf(r.Key),
		Value: stringOf(r.Value), Headers: headers, TimestampMs: r.Timestamp.UnixMilli()}
}

// franzProduce produces stdin's records to their given partitions with ProduceSync, which batches
// records per partition, and prints each record's partition and offset (or error) in input order.
// It also prints {"producer_id": ..., "producer_epoch": ...} last when the producer is idempotent.
func franzProduce(args []string) {
	fs := flag.NewFlagSet("franz-produce", flag.ExitOnError)
	commonFlags(fs)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	acks := fs.String("acks", "all", "all | leader | none")
	codec := fs.String("codec", "none", "none | gzip | snappy | lz4 | zstd")
	idempotent := fs.Bool("idempotent", false, "idempotent producer (needs -acks all)")
	linger := fs.Duration("linger", 20*time.Millisecond, "how long to linger for a batch")
	retries := fs.Int("retries", 5, "tries per record on retriable errors")
	fs.Parse(args)
	opts := []kgo.Opt{
		kgo.SeedBrokers(splitList(*brokers)...), kgo.DefaultProduceTopic(*topic),
		kgo.RequiredAcks(franzAcks(*acks)), kgo.ProducerBatchCompression(franzCodec(*codec)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(*linger),
		kgo.RecordRetries(*retries), // no RecordDeliveryTimeout: franz-go counts it from the record timestamp
	}
	if !*idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := franzClient(opts...)
	defer cl.Close()
	input := readRecords()
	records := make([]*kgo.Record, len(input))
	for i, in := range input {
		r := &kgo.Record{Partition: in.Partition, Key: bytesOf(in.Key), Value: bytesOf(in.Value),
			Timestamp: millis(in.TimestampMs)}
		for _, h := range in.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		records[i] = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make([]produced, len(records))
	index := make(map[*kgo.Record]int, len(records))
	for i, r := range records {
		index[r] = i
	}
	for _, res := range cl.ProduceSync(ctx, records...) { // in completion order, not input order
		i := index[res.Record]
		out[i] = produced{Partition: res.Record.Partition, Offset: res.Record.Offset}
		if res.Err != nil {
			out[i].Error = res.Err.Error()
		}
	}
	for _, o := range out {
		emit(o)
	}
	if *idempotent {
		id, epoch, err := cl.ProducerID(ctx)
		if err != nil {
			die("ProducerID: %v", err)
		}
		emit(map[string]any{"producer_id": id, "producer_epoch": epoch})
	}
}

// franzConsume reads -count records from the given partitions (all of them by default) starting
// at -offset (a number, "start" or "end") and prints them in the order they arrived.
func franzConsume(args []string) {
	fs := flag.NewFlagSet("franz-consume", flag.ExitOnError)
	commonFlags(fs)
	brokers := fs.String("brokers", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic")
	partitions := fs.String("partitions", "", "comma-separated partitions (default: consume the topic)")
	offset := fs.String("offset", "start", "start | end | an offset")
	count := fs.Int("count", 0, "records to read before exiting")
	timeout := fs.Duration("timeout", 30*time.Second, "give up (exit 1) after this long")
	maxBytes := fs.Int("fetch-max-partition-bytes", 1<<20, "max bytes per partition per fetch")
	fs.Parse(args)
	var start kgo.Offset
	switch *offset {
	case "start":
		start = kgo.NewOffset().AtStart()
	case "end":
		start = kgo.NewOffset().AtEnd()
	default:
		n, err := strconv.ParseInt(*offset, 10, 64)
		if err != nil {
			usage("bad -offset %q", *offset)
		}
		start = kgo.NewOffset().At(n)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(splitList(*brokers)...), kgo.FetchMaxPartitionBytes(int32(*maxBytes)),
		kgo.FetchMaxWait(500 * time.Millisecond)}
	if ps := splitList(*partitions); ps != nil {
		m := map[int32]kgo.Offset{}
		for _, p := range ps {
			n, err := strconv.Atoi(p)
			if err != nil {
				usage("bad -partitions %q", *partitions)
			}
			m[int32(n)] = start
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: m}))
	} else {
		opts = append(opts, kgo.ConsumeTopics(*topic), kgo.ConsumeResetOffset(start))
	}
	cl := franzClient(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	seen := 0
	for seen < *count {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			die("read %d of %d records before the timeout", seen, *count)
		}
		fetches.EachError(func(t string, p int32, err error) { die("fetch %s[%d]: %v", t, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			emit(fromFranz(r))
			seen++
		})
	}
}

// franzGroup is one consumer group member (classic protocol, or KIP-848 with -server-side). It
// commits every polled batch synchronously before it lets a rebalance happen, so a clean leave
// hands its partitions over without duplicates.
func franzGroup(args []string) {
	fs := flag.NewFlagSet("franz-group", flag.ExitOnError)
	commonFlags(fs)
	brokers := fs.String("brokers", "", "bootstrap servers")
	group := fs.String("group", "", "group id")
	topics := fs.String("topic", "", "comma-separated topics")
	name := fs.String("name", "", "member name in the output")
	balancer := fs.String("balancer", "cooperative-sticky", "cooperative-sticky | sticky | range | roundrobin")
	serverSide := fs.Bool("server-side", false, "KIP-848 consumer group (server-side assignor)")
	instanceID := fs.String("instance-id", "", "static membership (KIP-345): no leave on close")
	fs.Parse(args)
	var bal kgo.GroupBalancer
	switch *balancer {
	case "cooperative-sticky":
		bal = kgo.CooperativeStickyBalancer()
	case "sticky":
		bal = kgo.StickyBalancer()
	case "range":
		bal = kgo.RangeBalancer()
	case "roundrobin":
		bal = kgo.RoundRobinBalancer()
	default:
		usage("unknown balancer %q", *balancer)
	}
	var mu sync.Mutex
	owned := map[string]map[int32]bool{}
	change := func(m map[string][]int32, add bool) {
		mu.Lock()
		defer mu.Unlock()
		for t, ps := range m {
			if owned[t] == nil {
				owned[t] = map[int32]bool{}
			}
			for _, p := range ps {
				if add {
					owned[t][p] = true
				} else {
					delete(owned[t], p)
				}
			}
			if len(owned[t]) == 0 {
				delete(owned, t)
			}
		}
		emit(assignment(owned))
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(splitList(*brokers)...), kgo.ConsumerGroup(*group), kgo.ConsumeTopics(splitList(*topics)...),
		kgo.Balancers(bal), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, false) }),
	}
	if *serverSide {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if *instanceID != "" {
		opts = append(opts, kgo.InstanceID(*instanceID))
	}
	cl := franzClient(opts...)
	stop := stopSignal()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil {
				emit(map[string]any{"event": "error", "topic": t, "partition": p, "error": err.Error()})
			}
		})
		var batch []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			out := fromFranz(r)
			emit(map[string]any{"event": "record", "member": *name, "topic": out.Topic, "partition": out.Partition,
				"offset": out.Offset, "key": out.Key, "value": out.Value})
			batch = append(batch, r)
		})
		if len(batch) > 0 {
			if err := cl.CommitRecords(context.Background(), batch...); err != nil {
				emit(map[string]any{"event": "commit_error", "error": err.Error()})
			}
		}
		cl.AllowRebalance()
	}
	cl.Close() // leaves the group (LeaveGroup, or a KIP-848 heartbeat with member epoch -1)
	emit(map[string]any{"event": "closed"})
}
