package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// adminRequest is one line of franz-admin's input; each op reads the fields it needs.
type adminRequest struct {
	Op                string             `json:"op"`
	Topic             string             `json:"topic"`
	Topics            []string           `json:"topics"`
	Group             string             `json:"group"`
	Groups            []string           `json:"groups"`
	Partitions        int32              `json:"partitions"`
	ReplicationFactor int16              `json:"replication_factor"`
	Configs           map[string]*string `json:"configs"`
	Set               map[string]string  `json:"set"`
	Delete            []string           `json:"delete"`
	Append            map[string]string  `json:"append"`
	Subtract          map[string]string  `json:"subtract"`
	Count             int                `json:"count"`
	Kind              string             `json:"kind"`
	Milli             int64              `json:"milli"`
	Offsets           []offsetArg        `json:"offsets"`
	To                string             `json:"to"`
	States            []string           `json:"states"`
	Types             []string           `json:"types"`
	InstanceIDs       []string           `json:"instance_ids"`
}

type offsetArg struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
}

// errName is "" for success, the Kafka error name (UNKNOWN_TOPIC_OR_PARTITION ...) for a broker
// error code, and "CLIENT: ..." for anything the client raised itself.
func errName(err error) string {
	if err == nil {
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "CLIENT: " + err.Error()
}

type obj = map[string]any

// franzAdmin answers admin requests read from stdin (one JSON object per line) with kadm, one JSON
// line per request: the op's results, or {"request_error": ...} when the whole request failed.
func franzAdmin(args []string) {
	fs := flag.NewFlagSet("franz-admin", flag.ExitOnError)
	commonFlags(fs)
	brokers := fs.String("brokers", "", "bootstrap servers")
	fs.Parse(args)
	cl := franzClient(kgo.SeedBrokers(splitList(*brokers)...))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		var req adminRequest
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			usage("bad admin request: %v", err)
		}
		op := adminOps[req.Op]
		if op == nil {
			usage("unknown admin op %q", req.Op)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := op(ctx, adm, req)
		cancel()
		if err != nil {
			out = obj{"request_error": errName(err)}
		}
		emit(out)
	}
}

var adminOps = map[string]func(context.Context, *kadm.Client, adminRequest) (obj, error){
	"create_topics":            createTopics,
	"delete_topics":            deleteTopics,
	"list_topics":              listTopics,
	"describe_configs":         describeConfigs,
	"alter_configs":            alterConfigs,
	"alter_configs_state":      alterConfigsState,
	"create_partitions":        createPartitions,
	"list_offsets":             listOffsets,
	"delete_records":           deleteRecords,
	"list_groups":              listGroups,
	"describe_groups":          describeGroups,
	"describe_consumer_groups": describeConsumerGroups,
	"fetch_offsets":            fetchOffsets,
	"commit_offsets":           commitOffsets,
	"reset_offsets":            resetOffsets,
	"delete_groups":            deleteGroups,
	"leave_group":              leaveGroup,
	"delete_offsets":           deleteOffsets,
}

func createTopics(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	rf := r.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	resps, err := adm.CreateTopics(ctx, r.Partitions, rf, r.Configs, r.Topics...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for t, resp := range resps {
		out[t] = obj{"error": errName(resp.Err), "error_message": resp.ErrMessage, "partitions": resp.NumPartitions,
			"replication_factor": resp.ReplicationFactor, "topic_id": resp.ID.String()}
	}
	return obj{"topics": out}, nil
}

func deleteTopics(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	resps, err := adm.DeleteTopics(ctx, r.Topics...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for t, resp := range resps {
		out[t] = obj{"error": errName(resp.Err)}
	}
	return obj{"topics": out}, nil
}

// listTopics describes the named topics (every topic, internal ones included, when none are named).
func listTopics(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	details, err := adm.ListTopicsWithInternal(ctx, r.Topics...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for t, d := range details {
		parts := []obj{}
		for _, p := range d.Partitions.Sorted() {
			parts = append(parts, obj{"partition": p.Partition, "leader": p.Leader, "leader_epoch": p.LeaderEpoch,
				"replicas": p.Replicas, "isr": p.ISR, "error": errName(p.Err)})
		}
		out[t] = obj{"error": errName(d.Err), "internal": d.IsInternal, "topic_id": d.ID.String(), "partitions": parts}
	}
	return obj{"topics": out}, nil
}

func describeConfigs(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	resources, err := adm.DescribeTopicConfigs(ctx, r.Topics...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for _, res := range resources {
		configs := obj{}
		for _, c := range res.Configs {
			configs[c.Key] = obj{"value": c.Value, "source": c.Source.String(), "sensitive": c.Sensitive}
		}
		out[res.Name] = obj{"error": errName(res.Err), "configs": configs}
	}
	return obj{"topics": out}, nil
}

func alterResults(resps kadm.AlterConfigsResponses) obj {
	out := obj{}
	for _, resp := range resps {
		out[resp.Name] = obj{"error": errName(resp.Err), "error_message": resp.ErrMessage}
	}
	return obj{"topics": out}
}

// alterConfigs is IncrementalAlterConfigs: "set" sets keys, "delete" reverts keys to the default,
// "append" and "subtract" add or remove an item of a list config.
func alterConfigs(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	var alters []kadm.AlterConfig
	for _, k := range sortedKeys(r.Set) {
		v := r.Set[k]
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range r.Delete {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	for _, k := range sortedKeys(r.Append) {
		v := r.Append[k]
		alters = append(alters, kadm.AlterConfig{Op: kadm.AppendConfig, Name: k, Value: &v})
	}
	for _, k := range sortedKeys(r.Subtract) {
		v := r.Subtract[k]
		alters = append(alters, kadm.AlterConfig{Op: kadm.SubtractConfig, Name: k, Value: &v})
	}
	resps, err := adm.AlterTopicConfigs(ctx, alters, r.Topics...)
	if err != nil {
		return nil, err
	}
	return alterResults(resps), nil
}

// alterConfigsState is the legacy AlterConfigs: the topic's dynamic configs become exactly "set".
func alterConfigsState(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	var alters []kadm.AlterConfig
	for _, k := range sortedKeys(r.Set) {
		v := r.Set[k]
		alters = append(alters, kadm.AlterConfig{Name: k, Value: &v})
	}
	resps, err := adm.AlterTopicConfigsState(ctx, alters, r.Topics...)
	if err != nil {
		return nil, err
	}
	return alterResults(resps), nil
}

// createPartitions adds "count" partitions, or with "to": "set" grows the topic to "count".
func createPartitions(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	var resps kadm.CreatePartitionsResponses
	var err error
	if r.To == "set" {
		resps, err = adm.UpdatePartitions(ctx, r.Count, r.Topics...)
	} else {
		resps, err = adm.CreatePartitions(ctx, r.Count, r.Topics...)
	}
	if err != nil {
		return nil, err
	}
	out := obj{}
	for t, resp := range resps {
		out[t] = obj{"error": errName(resp.Err), "error_message": resp.ErrMessage}
	}
	return obj{"topics": out}, nil
}

// listOffsets lists "kind" offsets: start, end, max_timestamp, or after_milli (the first offset
// whose timestamp is at least "milli").
func listOffsets(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	var listed kadm.ListedOffsets
	var err error
	switch r.Kind {
	case "start":
		listed, err = adm.ListStartOffsets(ctx, r.Topics...)
	case "end":
		listed, err = adm.ListEndOffsets(ctx, r.Topics...)
	case "max_timestamp":
		listed, err = adm.ListMaxTimestampOffsets(ctx, r.Topics...)
	case "after_milli":
		listed, err = adm.ListOffsetsAfterMilli(ctx, r.Milli, r.Topics...)
	default:
		usage("unknown list_offsets kind %q", r.Kind)
	}
	if err != nil {
		return nil, err
	}
	out := []obj{}
	listed.Each(func(o kadm.ListedOffset) {
		out = append(out, obj{"topic": o.Topic, "partition": o.Partition, "offset": o.Offset,
			"timestamp": o.Timestamp, "leader_epoch": o.LeaderEpoch, "error": errName(o.Err)})
	})
	sortByTopicPartition(out)
	return obj{"offsets": out}, nil
}

func toOffsets(args []offsetArg) kadm.Offsets {
	os := kadm.Offsets{}
	for _, a := range args {
		os.Add(kadm.Offset{Topic: a.Topic, Partition: a.Partition, At: a.Offset, LeaderEpoch: -1, Metadata: a.Metadata})
	}
	return os
}

func deleteRecords(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	resps, err := adm.DeleteRecords(ctx, toOffsets(r.Offsets))
	if err != nil {
		return nil, err
	}
	out := []obj{}
	resps.Each(func(d kadm.DeleteRecordsResponse) {
		out = append(out, obj{"topic": d.Topic, "partition": d.Partition, "low_watermark": d.LowWatermark,
			"error": errName(d.Err)})
	})
	sortByTopicPartition(out)
	return obj{"partitions": out}, nil
}

func listGroups(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	listed, err := adm.ListGroupsByType(ctx, r.Types, r.States...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for g, l := range listed {
		out[g] = obj{"protocol_type": l.ProtocolType, "state": l.State}
	}
	return obj{"groups": out}, nil
}

// describeGroups is the classic DescribeGroups, with each member's decoded consumer assignment.
func describeGroups(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	described, err := adm.DescribeGroups(ctx, r.Groups...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for g, d := range described {
		members := []obj{}
		for _, m := range d.Members {
			assigned := [][2]any{}
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					for _, p := range t.Partitions {
						assigned = append(assigned, [2]any{t.Topic, p})
					}
				}
			}
			members = append(members, obj{"member_id": m.MemberID, "client_id": m.ClientID, "assigned": assigned})
		}
		out[g] = obj{"error": errName(d.Err), "state": d.State, "protocol_type": d.ProtocolType,
			"protocol": d.Protocol, "members": members}
	}
	return obj{"groups": out}, nil
}

// describeConsumerGroups is KIP-848's ConsumerGroupDescribe.
func describeConsumerGroups(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	described, err := adm.DescribeConsumerGroups(ctx, r.Groups...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for g, d := range described {
		members := []obj{}
		for _, m := range d.Members {
			assigned := [][2]any{}
			m.Assignment.EachPartitions(func(t string, ps []int32) {
				for _, p := range ps {
					assigned = append(assigned, [2]any{t, p})
				}
			})
			members = append(members, obj{"member_id": m.MemberID, "member_epoch": m.MemberEpoch,
				"subscribed_topics": m.SubscribedTopics, "assigned": assigned})
		}
		out[g] = obj{"error": errName(d.Err), "state": d.State, "epoch": d.Epoch, "assignor": d.AssignorName,
			"members": members}
	}
	return obj{"groups": out}, nil
}

func offsetResponses(resps kadm.OffsetResponses) obj {
	out := []obj{}
	resps.Each(func(o kadm.OffsetResponse) {
		out = append(out, obj{"topic": o.Topic, "partition": o.Partition, "offset": o.At,
			"leader_epoch": o.LeaderEpoch, "metadata": o.Metadata, "error": errName(o.Err)})
	})
	sortByTopicPartition(out)
	return obj{"offsets": out}
}

func fetchOffsets(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	resps, err := adm.FetchOffsets(ctx, r.Group)
	if err != nil {
		return nil, err
	}
	return offsetResponses(resps), nil
}

func commitOffsets(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	resps, err := adm.CommitOffsets(ctx, r.Group, toOffsets(r.Offsets))
	if err != nil {
		return nil, err
	}
	return offsetResponses(resps), nil
}

// resetOffsets commits the start ("to": "start") or end ("to": "end") offsets of "topics" for the
// group, as kafka-consumer-groups --reset-offsets does.
func resetOffsets(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	var listed kadm.ListedOffsets
	var err error
	if r.To == "end" {
		listed, err = adm.ListEndOffsets(ctx, r.Topics...)
	} else {
		listed, err = adm.ListStartOffsets(ctx, r.Topics...)
	}
	if err != nil {
		return nil, err
	}
	if err := listed.Error(); err != nil {
		return nil, err
	}
	resps, err := adm.CommitOffsets(ctx, r.Group, listed.Offsets())
	if err != nil {
		return nil, err
	}
	return offsetResponses(resps), nil
}

func deleteGroups(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	resps, err := adm.DeleteGroups(ctx, r.Groups...)
	if err != nil {
		return nil, err
	}
	out := obj{}
	for g, resp := range resps {
		out[g] = obj{"error": errName(resp.Err)}
	}
	return obj{"groups": out}, nil
}

// leaveGroup removes static members (KIP-345) by instance id, as an admin does.
func leaveGroup(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	resps, err := adm.LeaveGroup(ctx, kadm.LeaveGroup(r.Group).InstanceIDs(r.InstanceIDs...).Reason("test"))
	if err != nil {
		return nil, err
	}
	out := obj{}
	for id, resp := range resps {
		out[id] = obj{"member_id": resp.MemberID, "error": errName(resp.Err)}
	}
	return obj{"members": out}, nil
}

// deleteOffsets is OffsetDelete (Kafka 2.4+) for the partitions in "offsets" (offsets ignored).
func deleteOffsets(ctx context.Context, adm *kadm.Client, r adminRequest) (obj, error) {
	set := kadm.TopicsSet{}
	for _, o := range r.Offsets {
		set.Add(o.Topic, o.Partition)
	}
	resps, err := adm.DeleteOffsets(ctx, r.Group, set)
	if err != nil {
		return nil, err
	}
	out := []obj{}
	for t, ps := range resps {
		for p, err := range ps {
			out = append(out, obj{"topic": t, "partition": p, "error": errName(err)})
		}
	}
	sortByTopicPartition(out)
	return obj{"partitions": out}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortByTopicPartition(rows []obj) {
	sort.Slice(rows, func(i, j int) bool {
		ti, tj := rows[i]["topic"].(string), rows[j]["topic"].(string)
		if ti != tj {
			return ti < tj
		}
		return rows[i]["partition"].(int32) < rows[j]["partition"].(int32)
	})
}
