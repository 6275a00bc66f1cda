package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpmux/mcpmux/config"
)

// codeInvalidRequest is JSON-RPC's "Invalid Request".
const codeInvalidRequest = -32600

// limitBody caps the request body at limit bytes: it reads the body (the
// SDK's handler reads it whole anyway) through http.MaxBytesReader and
// answers a bigger one with 413 and a JSON-RPC error body. A client sees
// why, and the go-sdk client treats such an answer as the rejection of
// one request, not the end of its session. It returns the body read; ok
// is false when the request has been answered.
//
// The SDK's own MaxRequestBodyBytes is fixed when a handler is made and
// answers in plain text; mcpmux disables it and applies this one, which
// follows max_request_bytes across reloads.
func limitBody(w http.ResponseWriter, r *http.Request, limit config.Size) (body []byte, ok bool) {
	if limit <= 0 {
		limit = config.DefaultMaxRequestBytes
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	var err error
	tooLarge := r.ContentLength > int64(limit)
	if tooLarge {
		body, _ = io.ReadAll(io.LimitReader(r.Body, idPeekBytes))
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			tooLarge = true
		case err != nil:
			http.Error(w, "400 cannot read the request body: "+err.Error(), http.StatusBadRequest)
			return nil, false
		}
	}
	if tooLarge {
		w.Header().Set("Connection", "close") // the rest of the body is not read
		writeRPCError(w, http.StatusRequestEntityTooLarge, peekID(body), codeInvalidRequest,
			fmt.Sprintf("request body exceeds max_request_bytes (%v): send less, or raise max_request_bytes in mcpmux.yaml", limit))
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// idPeekBytes is how much of an oversized body is read to find its id.
const idPeekBytes = 64 << 10

// peekID finds the id of the JSON-RPC request that body begins, even if
// body is cut short: clients write "id" before "params". The zero ID (null)
// if there is none.
func peekID(body []byte) jsonrpc.ID {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		if key == "id" {
			if id, err := jsonrpc.MakeID(v); err == nil {
				return id
			}
			break
		}
	}
	return jsonrpc.ID{}
}

// writeRPCError answers with a JSON-RPC error for request id.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int, msg string) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: int64(code), Message: msg}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// writeRPCAnswer answers request id with result, or with rpcErr: 404 for
// a method not found, as MCP 2026-07-28 has an HTTP server answer one;
// 400 for any other error.
func writeRPCAnswer(w http.ResponseWriter, id jsonrpc.ID, result json.RawMessage, rpcErr *jsonrpc.Error) {
	if rpcErr != nil {
		status := http.StatusBadRequest
		if rpcErr.Code == jsonrpc.CodeMethodNotFound {
			status = http.StatusNotFound
		}
		writeRPCError(w, status, id, int(rpcErr.Code), rpcErr.Message)
		return
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: result})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
