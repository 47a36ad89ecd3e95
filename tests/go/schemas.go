package main

// franz-sr: franz-go's schema registry client (pkg/sr) against Tidelog's registry, with records
// produced and consumed through the broker by franz-go (kgo). One scenario per schema type:
//
//	tidelog-go-clients franz-sr -brokers B -registry URL -topic T -type avro|json|protobuf
//
// It sets the subject T-value to BACKWARD, registers version 1 (twice: the same id), checks an
// allowed and a refused evolution (the compatibility endpoint with verbose messages, then a refused
// registration: 409), registers the allowed version 2 (at BACKWARD, for every type), produces two records encoded with the serde (one per version, the
// wire format carrying the schema id and, for Protobuf, the message index), one record without the
// framing, and consumes the topic back, decoding each record with the schema its id names (fetched
// by id from the registry). Each step prints one JSON line {"step": ..., ...}; the Python test
// (tests/go/test_franz_sr.py) decides what is right.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// evolution is one schema type's texts: version 1, an allowed version 2 and a refused one.
type evolution struct {
	kind                 sr.SchemaType
	v1, v2, incompatible string
}

var evolutions = map[string]evolution{
	"avro": {
		kind: sr.TypeAvro,
		v1:   `{"type":"record","name":"User","namespace":"tidelog.test","fields":[{"name":"name","type":"string"}]}`,
		// a new field with a default: readers of version 2 read version 1's data
		v2: `{"type":"record","name":"User","namespace":"tidelog.test","fields":[{"name":"name","type":"string"},` +
			`{"name":"age","type":"int","default":0}]}`,
		// a new field without a default: they cannot
		incompatible: `{"type":"record","name":"User","namespace":"tidelog.test","fields":[{"name":"name","type":"string"},` +
			`{"name":"email","type":"string"}]}`,
	},
	"json": {
		kind: sr.TypeJSON,
		v1: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],` +
			`"additionalProperties":false}`,
		v2: `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"],` +
			`"additionalProperties":false}`,
		// a new required property: version 1's documents lack it
		incompatible: `{"type":"object","properties":{"name":{"type":"string"},"email":{"type":"string"}},` +
			`"required":["name","email"],"additionalProperties":false}`,
	},
	"protobuf": {
		kind: sr.TypeProtobuf,
		v1:   "syntax = \"proto3\";\npackage tidelog.test;\n\nmessage User {\n  string name = 1;\n}\n",
		v2:   "syntax = \"proto3\";\npackage tidelog.test;\n\nmessage User {\n  string name = 1;\n  int32 age = 2;\n}\n",
		// string -> int64 reads the same field number another way (FIELD_SCALAR_KIND_CHANGED)
		incompatible: "syntax = \"proto3\";\npackage tidelog.test;\n\nmessage User {\n  int64 name = 1;\n}\n",
	},
}

// responseCode is the registry's error_code of a refused call (0 if err is not a registry answer).
func responseCode(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

func franzSchemaRegistry(args []string) {
	fs := flag.NewFlagSet("franz-sr", flag.ExitOnError)
	commonFlags(fs)
	brokers := fs.String("brokers", "", "bootstrap servers")
	registry := fs.String("registry", "", "schema registry URL")
	topic := fs.String("topic", "", "topic (its value subject is TOPIC-value)")
	kind := fs.String("type", "avro", "avro | json | protobuf")
	fs.Parse(args)
	ev, ok := evolutions[*kind]
	if !ok {
		usage("-type must be avro, json or protobuf")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(*registry))
	if err != nil {
		die("sr client: %v", err)
	}
	subject := *topic + "-value"

	set := rcl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, subject)
	emit(map[string]any{"step": "set-compatibility", "level": set[0].Level.String(), "error": errText(set[0].Err)})

	first, err := rcl.CreateSchema(ctx, subject, sr.Schema{Schema: ev.v1, Type: ev.kind})
	if err != nil {
		die("register version 1: %v", err)
	}
	again, err := rcl.CreateSchema(ctx, subject, sr.Schema{Schema: ev.v1, Type: ev.kind})
	if err != nil {
		die("register version 1 again: %v", err)
	}
	emit(map[string]any{"step": "register-v1", "id": first.ID, "version": first.Version, "again_id": again.ID,
		"again_version": again.Version})

	verbose := sr.WithParams(ctx, sr.Verbose)
	allowed, err := rcl.CheckCompatibility(verbose, subject, -1, sr.Schema{Schema: ev.v2, Type: ev.kind})
	emit(map[string]any{"step": "check-allowed", "compatible": allowed.Is, "messages": allowed.Messages,
		"error": errText(err)})
	refused, err := rcl.CheckCompatibility(verbose, subject, -1, sr.Schema{Schema: ev.incompatible, Type: ev.kind})
	emit(map[string]any{"step": "check-refused", "compatible": refused.Is, "messages": refused.Messages,
		"error": errText(err)})
	_, err = rcl.CreateSchema(ctx, subject, sr.Schema{Schema: ev.incompatible, Type: ev.kind})
	emit(map[string]any{"step": "register-refused", "code": responseCode(err), "error": errText(err)})

	second, err := rcl.CreateSchema(ctx, subject, sr.Schema{Schema: ev.v2, Type: ev.kind})
	if err != nil {
		die("register version 2: %v", err)
	}
	versions, err := rcl.SubjectVersions(ctx, subject)
	emit(map[string]any{"step": "register-v2", "id": second.ID, "version": second.Version, "versions": versions,
		"error": errText(err)})

	// Produce: one record per version through the serde, and one without the wire format.
	var serde sr.Serde
	values := []map[string]any{{"name": "ada"}, {"name": "grace", "age": 36}}
	for i, s := range []sr.SubjectSchema{first, second} {
		register(&serde, *kind, s, i)
	}
	kcl, err := kgo.NewClient(kgo.SeedBrokers(splitList(*brokers)...), kgo.DefaultProduceTopic(*topic),
		kgo.ConsumeTopics(*topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordRetries(3))
	if err != nil {
		die("kgo client: %v", err)
	}
	defer kcl.Close()
	for i, v := range values {
		encoded, err := serde.Encode(message(*kind, i, v))
		if err != nil {
			die("encode: %v", err)
		}
		res := kcl.ProduceSync(ctx, &kgo.Record{Value: encoded})
		emit(map[string]any{"step": "produce", "schema_id": []int{first.ID, second.ID}[i], "offset": offsetOf(res),
			"error": errText(res.FirstErr())})
	}
	res := kcl.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"name": "no framing"}`)})
	emit(map[string]any{"step": "produce-plain", "error": errText(res.FirstErr())})

	// Consume back: each record decoded with the schema its id names, looked up by id.
	got := 0
	for got < len(values) && ctx.Err() == nil {
		fetches := kcl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			id, _, err := serde.DecodeID(r.Value)
			if err != nil {
				emit(map[string]any{"step": "consume", "offset": r.Offset, "error": err.Error()})
				got++
				return
			}
			decoded, text, err := decodeByID(ctx, rcl, *kind, id, r.Value)
			emit(map[string]any{"step": "consume", "offset": r.Offset, "schema_id": id, "value": decoded,
				"schema": text, "error": errText(err)})
			got++
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func offsetOf(res kgo.ProduceResults) int64 {
	if len(res) == 0 || res[0].Err != nil {
		return -1
	}
	return res[0].Record.Offset
}

// Go types of the two versions (Avro and JSON): the serde picks the schema id by the value's type.
type userV1 struct {
	Name string `avro:"name" json:"name"`
}
type userV2 struct {
	Name string `avro:"name" json:"name"`
	Age  int32  `avro:"age" json:"age"`
}

// protoV1 and protoV2 wrap the dynamic Protobuf messages so that the serde tells them apart by type.
type protoV1 struct{ msg *dynamicpb.Message }
type protoV2 struct{ msg *dynamicpb.Message }

func message(kind string, version int, v map[string]any) any {
	switch kind {
	case "protobuf":
		msg := dynamicpb.NewMessage(protoDescriptor(version))
		fields := msg.Descriptor().Fields()
		msg.Set(fields.ByName("name"), protoreflect.ValueOfString(v["name"].(string)))
		if version == 1 {
			msg.Set(fields.ByName("age"), protoreflect.ValueOfInt32(int32(v["age"].(int))))
			return protoV2{msg}
		}
		return protoV1{msg}
	default:
		if version == 1 {
			return userV2{Name: v["name"].(string), Age: int32(v["age"].(int))}
		}
		return userV1{Name: v["name"].(string)}
	}
}

// register tells the serde how to encode the value type of “version“ (0 or 1) with schema s.
func register(serde *sr.Serde, kind string, s sr.SubjectSchema, version int) {
	switch kind {
	case "avro":
		schema := avro.MustParse(s.Schema.Schema)
		enc := sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) })
		if version == 0 {
			serde.Register(s.ID, userV1{}, enc)
		} else {
			serde.Register(s.ID, userV2{}, enc)
		}
	case "json":
		enc := sr.EncodeFn(json.Marshal)
		if version == 0 {
			serde.Register(s.ID, userV1{}, enc)
		} else {
			serde.Register(s.ID, userV2{}, enc)
		}
	case "protobuf":
		if version == 0 {
			serde.Register(s.ID, protoV1{}, sr.Index(0),
				sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(protoV1).msg) }))
		} else {
			serde.Register(s.ID, protoV2{}, sr.Index(0),
				sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(protoV2).msg) }))
		}
	}
}

// protoDescriptor is message User of the .proto texts above, built in code (version 0: name; 1: name, age).
func protoDescriptor(version int) protoreflect.MessageDescriptor {
	field := func(name string, number int32, kind descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(number),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: kind.Enum(),
			JsonName: proto.String(name)}
	}
	fields := []*descriptorpb.FieldDescriptorProto{field("name", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING)}
	if version == 1 {
		fields = append(fields, field("age", 2, descriptorpb.FieldDescriptorProto_TYPE_INT32))
	}
	file := &descriptorpb.FileDescriptorProto{
		Name: proto.String(fmt.Sprintf("user_v%d.proto", version+1)), Package: proto.String("tidelog.test"),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("User"), Field: fields}},
	}
	fd, err := protodesc.NewFile(file, nil)
	if err != nil {
		die("protobuf descriptor: %v", err)
	}
	return fd.Messages().Get(0)
}

// decodeByID decodes a framed record with the schema “id“ names, fetched from the registry by id.
func decodeByID(ctx context.Context, rcl *sr.Client, kind string, id int, framed []byte) (any, string, error) {
	s, err := rcl.SchemaByID(ctx, id)
	if err != nil {
		return nil, "", err
	}
	var header sr.ConfluentHeader
	_, payload, err := header.DecodeID(framed)
	if err != nil {
		return nil, s.Schema, err
	}
	switch kind {
	case "avro":
		schema, err := avro.Parse(s.Schema)
		if err != nil {
			return nil, s.Schema, err
		}
		out := map[string]any{}
		err = avro.Unmarshal(schema, payload, &out)
		return out, s.Schema, err
	case "json":
		out := map[string]any{}
		err = json.Unmarshal(payload, &out)
		return out, s.Schema, err
	default:
		index, payload, err := header.DecodeIndex(payload, 8)
		if err != nil {
			return nil, s.Schema, err
		}
		version := 0
		if s.Schema == evolutions["protobuf"].v2 {
			version = 1
		}
		msg := dynamicpb.NewMessage(protoDescriptor(version))
		if err := proto.Unmarshal(payload, msg); err != nil {
			return nil, s.Schema, err
		}
		out := map[string]any{"index": index}
		msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			out[string(fd.Name())] = v.Interface()
			return true
		})
		return out, s.Schema, nil
	}
}
