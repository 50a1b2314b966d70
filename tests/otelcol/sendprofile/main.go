// sendprofile posts one hand-encoded OTLP ExportProfilesServiceRequest to a Collector's OTLP/HTTP
// receiver, written field by field from the field numbers of opentelemetry-proto v1.11.0
// (profiles v1development) with nothing but protowire, the way heapsnap's C code writes it. It
// checks the shape the Collector accepts, independently of the Collector's own encoder.
//
//	go run ./sendprofile http://127.0.0.1:4318/v1development/profiles
//
// With SENDPROFILE_OUT=FILE it also writes the request's bytes to FILE.
package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

type msg []byte

func (m msg) varint(field protowire.Number, v uint64) msg {
	m = protowire.AppendTag(m, field, protowire.VarintType)
	return protowire.AppendVarint(m, v)
}
func (m msg) fixed64(field protowire.Number, v uint64) msg {
	m = protowire.AppendTag(m, field, protowire.Fixed64Type)
	return protowire.AppendFixed64(m, v)
}
func (m msg) bytes(field protowire.Number, b []byte) msg {
	m = protowire.AppendTag(m, field, protowire.BytesType)
	return protowire.AppendBytes(m, b)
}
func (m msg) str(field protowire.Number, s string) msg { return m.bytes(field, []byte(s)) }
func (m msg) sub(field protowire.Number, sub msg) msg  { return m.bytes(field, sub) }

// packed writes a repeated int32/int64 field packed, as proto3 does by default.
func (m msg) packed(field protowire.Number, vs ...int64) msg {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, uint64(v))
	}
	return m.bytes(field, p)
}

// common.v1.KeyValue{key=1, value=2}; AnyValue{string_value=1, int_value=3}
func kvStr(k, v string) msg { return msg{}.str(1, k).sub(2, msg{}.str(1, v)) }
func kvInt(k string, v int64) msg {
	return msg{}.str(1, k).sub(2, msg{}.varint(3, uint64(v)))
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sendprofile URL")
		os.Exit(2)
	}
	strs := []string{"", // string_table[0] MUST be ""
		"inuse_space", "bytes", "inuse_objects", "count", // 1-4
		"/usr/bin/demo", "cache_insert", "main", "demo.c", // 5-8
		"process.executable.build_id.gnu", "space", "heapsnap", // 9-11
	}
	const buildID = "3d979d270bc58fe827b654768fe976c74bd759ed"

	// ProfilesDictionary: mapping_table=1 location_table=2 function_table=3 link_table=4
	// string_table=5 attribute_table=6 stack_table=7; every table's [0] is the zero value.
	dict := msg{}
	// Mapping{memory_start=1 memory_limit=2 file_offset=3 filename_strindex=4 attribute_indices=5}
	dict = dict.sub(1, msg{})
	dict = dict.sub(1, msg{}.varint(1, 0x400000).varint(2, 0x401000).varint(3, 0).
		varint(4, 5).packed(5, 1))
	// Location{mapping_index=1 address=2 lines=3 attribute_indices=4}; Line{function_index=1 line=2 column=3}
	dict = dict.sub(2, msg{})
	dict = dict.sub(2, msg{}.varint(1, 1).varint(2, 0x401234).sub(3, msg{}.varint(1, 1).varint(2, 42)))
	dict = dict.sub(2, msg{}.varint(1, 1).varint(2, 0x401100).sub(3, msg{}.varint(1, 2).varint(2, 10)))
	// Function{name_strindex=1 system_name_strindex=2 filename_strindex=3 start_line=4}
	dict = dict.sub(3, msg{})
	dict = dict.sub(3, msg{}.varint(1, 6).varint(2, 6).varint(3, 8).varint(4, 40))
	dict = dict.sub(3, msg{}.varint(1, 7).varint(2, 7).varint(3, 8).varint(4, 5))
	// Link{trace_id=1 span_id=2}: [0] with 16 and 8 zero bytes, as the proto recommends
	dict = dict.sub(4, msg{}.bytes(1, make([]byte, 16)).bytes(2, make([]byte, 8)))
	for _, s := range strs {
		dict = dict.str(5, s)
	}
	// KeyValueAndUnit{key_strindex=1 value=2 unit_strindex=3}
	dict = dict.sub(6, msg{})
	dict = dict.sub(6, msg{}.varint(1, 9).sub(2, msg{}.str(1, buildID)))
	// Stack{location_indices=1}, leaf first
	dict = dict.sub(7, msg{})
	dict = dict.sub(7, msg{}.packed(1, 1, 2))

	const t0 = 1764688800000000000 // 2025-12-02T15:20:00Z
	// Profile{sample_type=1 samples=2 time_unix_nano=3(fixed64) duration_nano=4 period_type=5
	// period=6 profile_id=7 dropped_attributes_count=8 original_payload_format=9
	// original_payload=10 attribute_indices=11}; ValueType{type_strindex=1 unit_strindex=2};
	// Sample{stack_index=1 attribute_indices=2 link_index=3 values=4 timestamps_unix_nano=5}
	profile := func(typ, unit uint64, value int64, id byte) msg {
		return msg{}.sub(1, msg{}.varint(1, typ).varint(2, unit)).
			sub(2, msg{}.varint(1, 1).packed(4, value)).
			fixed64(3, t0).varint(4, 60e9).
			sub(5, msg{}.varint(1, 10).varint(2, 2)).varint(6, 1).
			bytes(7, append(make([]byte, 15), id))
	}
	// ScopeProfiles{scope=1 profiles=2 schema_url=3}; InstrumentationScope{name=1 version=2}
	scope := msg{}.sub(1, msg{}.str(1, "heapsnap").str(2, "0.1.0")).
		sub(2, profile(1, 2, 819200, 1)).
		sub(2, profile(3, 4, 100, 2))
	// Resource{attributes=1}
	res := msg{}.sub(1, kvStr("service.name", "demo")).sub(1, kvStr("host.name", "vm")).
		sub(1, kvInt("process.pid", 1234)).sub(1, kvStr("process.executable.name", "demo"))
	// ResourceProfiles{resource=1 scope_profiles=2 schema_url=3}
	rp := msg{}.sub(1, res).sub(2, scope)
	// ExportProfilesServiceRequest{resource_profiles=1 dictionary=2}
	req := msg{}.sub(1, rp).sub(2, dict)

	if out := os.Getenv("SENDPROFILE_OUT"); out != "" { // the request's bytes, for curl
		if err := os.WriteFile(out, req, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "sendprofile:", err)
			os.Exit(1)
		}
	}
	resp, err := http.Post(os.Args[1], "application/x-protobuf", bytes.NewReader(req))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sendprofile:", err)
		os.Exit(1)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("sent %d bytes: HTTP %d, %s, response %d bytes %x\n",
		len(req), resp.StatusCode, resp.Header.Get("Content-Type"), len(body), body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "sendprofile: %s\n", body)
		os.Exit(1)
	}
}
