/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Framing and envelopes of the protocol in protocol.h: NUL-terminated JSON messages on a
 * stream socket. No I/O policy lives here: the reader takes bytes however the caller got
 * them, the writer hands back bytes to send, so both work with blocking clients and the
 * daemon's event loop alike. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json-util.h"
#include "macro.h"
#include "protocol.h"

/* ---- Reading ---- */

typedef struct MessageReader MessageReader;

/* max_size: the largest message accepted, without its NUL (CORRAL_MESSAGE_SIZE_MAX). */
MessageReader *message_reader_new(size_t max_size);
MessageReader *message_reader_free(MessageReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(MessageReader *, message_reader_free);
#define _cleanup_message_reader_ _cleanup_(message_reader_freep)

/* Takes n bytes from the stream. A message growing beyond max_size is discarded as it
 * arrives (never buffered whole) up to its NUL, and reported by message_reader_next() in
 * its place in the stream, so replies keep request order. Memory held is at most
 * max_size plus the bytes fed since the last time message_reader_next() returned 0:
 * drain after every feed. 0 or -ENOMEM. */
int message_reader_feed(MessageReader *r, const void *data, size_t n);

/* Reads once from fd (at most 64 KiB) and feeds what came: the number of bytes read, 0 on
 * EOF, or -errno (-EAGAIN on a non-blocking socket with nothing to read). */
int message_reader_fill(MessageReader *r, int fd);

/* The most descriptors one message can carry (the kernel's SCM_MAX_FD): all of them are
 * received, so that none is dropped by the kernel in the reader's thread. */
#define MESSAGE_RECV_FDS_MAX 253U

/* message_reader_fill() that also takes descriptors passed with SCM_RIGHTS (received
 * O_CLOEXEC) into fds (room for MESSAGE_RECV_FDS_MAX), *ret_n_fds of them, every one
 * received even on an error: the caller closes them, never this (a close may wait on a
 * file system's server, or a socket's linger). Any other control message, or more than
 * max_fds descriptors: -ETOOMANYREFS, the bytes dropped (the stream is then unusable). */
int message_reader_fill_fds(MessageReader *r, int fd, int fds[static MESSAGE_RECV_FDS_MAX], size_t max_fds,
                            size_t *ret_n_fds);

/* Nothing buffered: neither a complete message nor part of one. */
bool message_reader_is_empty(const MessageReader *r) _pure_;

/* Pops the next complete message: 1 with *ret (NUL-terminated, malloc'ed) and *ret_len;
 * 0 when no complete message is buffered yet; -EMSGSIZE for a message that was too large
 * (it is consumed; the stream stays usable and the next call continues after it). */
int message_reader_next(MessageReader *r, char **ret, size_t *ret_len);

/* True when a complete message (or the report of an over-size one) waits to be popped. */
bool message_reader_has_message(const MessageReader *r) _pure_;

/* True while part of a message (or of an over-size message being skipped) is pending:
 * EOF now means the peer hung up mid-message. */
bool message_reader_has_partial(const MessageReader *r);

/* ---- Writing ---- */

/* Serializes o compactly and appends the NUL: *ret holds *ret_len bytes including it.
 * -EMSGSIZE when the text exceeds max_size. */
int message_serialize(json_object *o, size_t max_size, char **ret, size_t *ret_len);

typedef struct MessageWriter MessageWriter;

/* max_pending bounds queued output, so a client that never reads cannot make the daemon
 * buffer without limit. */
MessageWriter *message_writer_new(size_t max_pending);
MessageWriter *message_writer_free(MessageWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(MessageWriter *, message_writer_free);
#define _cleanup_message_writer_ _cleanup_(message_writer_freep)

/* Queues one message. -EMSGSIZE if it exceeds CORRAL_MESSAGE_SIZE_MAX, -ENOBUFS if the
 * queue would exceed max_pending. */
int message_writer_queue(MessageWriter *w, json_object *o);
size_t message_writer_pending(const MessageWriter *w) _pure_;
/* Writes as much as the socket takes: 0 when everything went out, -EAGAIN when some
 * is still queued, or -errno. */
int message_writer_flush(MessageWriter *w, int fd);
/* The same, of the bytes before position upto only: positions count every byte the
 * writer was ever given (message_writer_queued()), so that a caller can mark where a
 * message ends and let out no more than that. 0 when all up to there went out. */
int message_writer_flush_upto(MessageWriter *w, int fd, uint64_t upto);
/* Bytes ever queued, and ever written: the position after the last queued message, and
 * how far the writing got. */
uint64_t message_writer_queued(const MessageWriter *w) _pure_;
uint64_t message_writer_written(const MessageWriter *w) _pure_;

/* ---- Requests (server side) ---- */

typedef struct Request {
        CorralMethod method;
        char *method_name;          /* as sent, for MethodNotFound */
        json_object *parameters;    /* owned; an empty object when the request had none */
        bool more;
        bool oneway;
} Request;

void request_done(Request *req);

/* Parses a request envelope. On failure returns -EBADMSG (ret_error: InvalidRequest),
 * -EPROTO (ProtocolVersionMismatch) or -EOPNOTSUPP (MethodNotFound; req->method_name is
 * then set so the reply can name it), with *ret_error the error to send. Unknown
 * envelope keys are rejected rather than ignored. */
int request_parse(const char *text, size_t len, Request *req, CorralError *ret_error);

/* Builds {"method", "parameters", "more"?}: client side. parameters may be NULL (an empty
 * object is sent) and its reference is taken. */
json_object *request_new(CorralMethod method, json_object *parameters, bool more);

/* ---- Replies ---- */

/* {"parameters": p, "continues": true?}; takes p's reference, NULL gives {}. */
json_object *reply_new(json_object *parameters, bool continues);
/* {"error": name, "parameters": p}; takes p's reference. */
json_object *reply_error_new(CorralError error, json_object *parameters);
json_object *reply_invalid_parameter(const char *parameter, const char *message);
json_object *reply_invalid_state(const char *state);
json_object *reply_invalid_request(const char *message);
json_object *reply_message_too_large(void);
json_object *reply_method_not_found(const char *method);
json_object *reply_no_such_job(uint64_t job_id);
json_object *reply_protocol_version_mismatch(int64_t client_version);

/* Client side. */
typedef struct Reply {
        char *error;                /* NULL on success; unknown error names are kept as sent */
        json_object *parameters;    /* owned; never NULL after a successful parse */
        bool continues;
        char *warning;              /* the envelope's "warning", NULL when none */
} Reply;

void reply_done(Reply *reply);
/* -EBADMSG on a malformed reply. */
int reply_parse(const char *text, size_t len, Reply *ret);
