// Command tidelog-go-clients drives real Go Kafka clients (franz-go and IBM/sarama) against a
// broker for Tidelog's pytest suite (tests/go/test_*.py). Each subcommand does one client-side job
// and reports what the client observed as JSON lines on stdout; the Python tests decide what is
// right. Client failures go to stderr with exit code 1; usage errors exit 2.
//
//	tidelog-go-clients franz-produce  -brokers B -topic T [-acks all|leader|none] [-codec C] [-idempotent]
//	tidelog-go-clients franz-consume  -brokers B -topic T -count N [-partitions 0,1] [-offset O]
//	tidelog-go-clients franz-group    -brokers B -group G -topic T [-name M] [-balancer B] [-server-side]
//	tidelog-go-clients franz-admin    -brokers B            (requests on stdin, one JSON object per line)
//	tidelog-go-clients franz-sr       -brokers B -registry URL -topic T -type avro|json|protobuf  (schemas.go)
//	tidelog-go-clients sarama-produce -brokers B -topic T -version V [-async] [-codec C] [-idempotent] [-acks A]
//	tidelog-go-clients sarama-consume -brokers B -topic T -version V -partition P -offset O -count N
//	tidelog-go-clients sarama-group   -brokers B -group G -topic T -version V [-name M]
//
// Producers read records from stdin, one JSON object per line:
//
//	{"partition": 0, "key": "k" | null, "value": "v" | null, "headers": [["h", "v"]], "timestamp_ms": 1700000000000}
//
// and print one result per record in input order. Consumers print records in the same shape plus
// "offset" and "topic". Group members print {"event": "assigned", "partitions": [[topic, p]...]}
// whenever their assignment changes, {"event": "record", ...} per record (committed synchronously
// before the next poll), and {"event": "closed"} after leaving the group, which they do when stdin
// reaches EOF or on SIGTERM.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// record is the JSON shape of a record in and out of every subcommand.
type record struct {
	Topic       string      `json:"topic,omitempty"`
	Partition   int32       `json:"partition"`
	Offset      int64       `json:"offset"`
	Key         *string     `json:"key"`
	Value       *string     `json:"value"`
	Headers     [][2]string `json:"headers"`
	TimestampMs int64       `json:"timestamp_ms,omitempty"`
	Error       string      `json:"error,omitempty"`
}

// produced is a producer's report on one record.
type produced struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error,omitempty"`
}

var stdoutMu sync.Mutex

// emit prints one JSON line on stdout; safe from any goroutine.
func emit(v any) {
	line, err := json.Marshal(v)
	if err != nil {
		die("cannot encode output: %v", err)
	}
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "tidelog-go-clients: "+format+"\n", args...)
	os.Exit(1)
}

func usage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "tidelog-go-clients: "+format+"\n", args...)
	os.Exit(2)
}

// readRecords reads the producer input (JSON lines) from stdin.
func readRecords() []record {
	var out []record
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var r record
		if err := dec.Decode(&r); err == io.EOF {
			return out
		} else if err != nil {
			usage("bad record on stdin: %v", err)
		}
		out = append(out, r)
	}
}

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

func stringOf(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// stopSignal is closed when stdin reaches EOF or the process gets SIGTERM/SIGINT.
func stopSignal() <-chan struct{} {
	stop := make(chan struct{})
	var once sync.Once
	done := func() { once.Do(func() { close(stop) }) }
	go func() {
		io.Copy(io.Discard, os.Stdin)
		done()
	}()
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		done()
	}()
	return stop
}

// assignment reports a member's partitions as a sorted [[topic, partition]...] list.
func assignment(owned map[string]map[int32]bool) map[string]any {
	parts := [][2]any{}
	topics := make([]string, 0, len(owned))
	for t := range owned {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		ps := make([]int, 0, len(owned[t]))
		for p := range owned[t] {
			ps = append(ps, int(p))
		}
		sort.Ints(ps)
		for _, p := range ps {
			parts = append(parts, [2]any{t, p})
		}
	}
	return map[string]any{"event": "assigned", "partitions": parts}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

var commands = map[string]func(args []string){
	"franz-produce":  franzProduce,
	"franz-consume":  franzConsume,
	"franz-group":    franzGroup,
	"franz-admin":    franzAdmin,
	"franz-sr":       franzSchemaRegistry,
	"sarama-produce": saramaProduce,
	"sarama-consume": saramaConsume,
	"sarama-group":   saramaGroup,
}

func main() {
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		usage("usage: tidelog-go-clients {%s} [flags]", strings.Join(names, "|"))
	}
	commands[os.Args[1]](os.Args[2:])
}
