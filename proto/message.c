/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errno-util.h"
#include "fd-util.h"
#include "message.h"

#define READ_CHUNK (64U << 10)

struct MessageReader {
        size_t max_size;

        /* buf[rpos, mstart): complete messages, each NUL-terminated, not yet popped;
         * buf[mstart, wpos): the message still arriving. */
        char *buf;
        size_t allocated, rpos, mstart, wpos;

        /* Buffer offsets at which an over-size message stood, in stream order. */
        size_t *oversize;
        size_t n_oversize, oversize_allocated;

        /* Discarding the rest of an over-size message up to its NUL. */
        bool skipping;
};

MessageReader *message_reader_new(size_t max_size) {
        MessageReader *r;

        r = new0(MessageReader, 1);
        if (!r)
                return NULL;
        r->max_size = max_size;
        return r;
}

MessageReader *message_reader_free(MessageReader *r) {
        if (!r)
                return NULL;
        free(r->buf);
        free(r->oversize);
        return mfree(r);
}

static void reader_compact(MessageReader *r) {
        if (r->rpos == 0)
                return;
        memmove(r->buf, r->buf + r->rpos, r->wpos - r->rpos);
        for (size_t i = 0; i < r->n_oversize; i++)
                r->oversize[i] -= r->rpos;
        r->mstart -= r->rpos;
        r->wpos -= r->rpos;
        r->rpos = 0;
}

static int reader_append(MessageReader *r, const char *p, size_t n) {
        if (n == 0)
                return 0;
        if (!GREEDY_REALLOC(r->buf, r->allocated, r->wpos + n))
                return -ENOMEM;
        memcpy(r->buf + r->wpos, p, n);
        r->wpos += n;
        return 0;
}

static int reader_mark_oversize(MessageReader *r) {
        if (!GREEDY_REALLOC(r->oversize, r->oversize_allocated, r->n_oversize + 1))
                return -ENOMEM;
        r->oversize[r->n_oversize++] = r->mstart;
        r->wpos = r->mstart; /* drop what we had of it */
        return 0;
}

int message_reader_feed(MessageReader *r, const void *data, size_t n) {
        const char *p = data, *end = p + n;
        int ret;

        assert(r);
        assert(data || n == 0);

        reader_compact(r);

        while (p < end) {
                const char *nul = memchr(p, 0, (size_t) (end - p));
                size_t seg = (size_t) ((nul ?: end) - p);

                if (r->skipping) {
                        if (nul)
                                r->skipping = false;
                        p += seg + !!nul;
                        continue;
                }

                if (r->wpos - r->mstart + seg > r->max_size) {
                        ret = reader_mark_oversize(r);
                        if (ret < 0)
                                return ret;
                        if (!nul)
                                r->skipping = true;
                        p += seg + !!nul;
                        continue;
                }

                ret = reader_append(r, p, seg + !!nul);
                if (ret < 0)
                        return ret;
                if (nul)
                        r->mstart = r->wpos;
                p += seg + !!nul;
        }
        return 0;
}

int message_reader_fill(MessageReader *r, int fd) {
        _cleanup_free_ char *chunk = NULL;
        ssize_t l;
        int ret;

        assert(r);

        /* Through a bounce buffer, so the over-size check in feed sees every byte before
         * it is kept. */
        chunk = malloc(READ_CHUNK);
        if (!chunk)
                return -ENOMEM;
        l = read(fd, chunk, READ_CHUNK);
        if (l < 0)
                return negative_errno();
        ret = message_reader_feed(r, chunk, (size_t) l);
        if (ret < 0)
                return ret;
        return (int) l;
}

int message_reader_fill_fds(MessageReader *r, int fd, int fds[static MESSAGE_RECV_FDS_MAX], size_t max_fds,
                            size_t *ret_n_fds) {
        _cleanup_free_ char *chunk = NULL;
        /* Room for all a message can carry: what does not fit, the kernel drops here, and
         * dropping a descriptor's last reference may wait (a socket's linger). */
        union {
                struct cmsghdr cmsg;
                char buf[CMSG_SPACE(sizeof(int) * MESSAGE_RECV_FDS_MAX)];
        } control;
        struct iovec iov;
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof control,
        };
        size_t n = 0;
        bool bad = false;
        ssize_t l;
        int ret;

        assert(r);
        assert(ret_n_fds);
        assert(max_fds <= CORRAL_RUN_FDS);

        *ret_n_fds = 0;
        chunk = malloc(READ_CHUNK);
        if (!chunk)
                return -ENOMEM;
        iov = (struct iovec) { .iov_base = chunk, .iov_len = READ_CHUNK };
        /* CLOEXEC at once: no descriptor of a peer's may leak into a child spawned before
         * the daemon has decided what to do with it. */
        l = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (l < 0)
                return negative_errno();
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                size_t k;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
                        bad = true;
                        continue;
                }
                k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k && n < MESSAGE_RECV_FDS_MAX; i++)
                        memcpy(&fds[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
        *ret_n_fds = n;
        if (bad || n > max_fds || (mh.msg_flags & MSG_CTRUNC))
                return -ETOOMANYREFS;
        ret = message_reader_feed(r, chunk, (size_t) l);
        if (ret < 0)
                return ret;
        return (int) l;
}

bool message_reader_is_empty(const MessageReader *r) {
        return !r || (r->rpos == r->wpos && !r->skipping && r->n_oversize == 0);
}

int message_reader_next(MessageReader *r, char **ret, size_t *ret_len) {
        const char *nul;
        size_t len;
        char *m;

        assert(r);
        assert(ret);

        if (r->n_oversize > 0 && r->oversize[0] == r->rpos) {
                memmove(r->oversize, r->oversize + 1, (r->n_oversize - 1) * sizeof(size_t));
                r->n_oversize--;
                return -EMSGSIZE;
        }
        if (r->rpos >= r->mstart)
                return 0;

        nul = memchr(r->buf + r->rpos, 0, r->mstart - r->rpos);
        assert(nul);
        len = (size_t) (nul - (r->buf + r->rpos));
        m = malloc(len + 1);
        if (!m)
                return -ENOMEM;
        memcpy(m, r->buf + r->rpos, len + 1);
        r->rpos += len + 1;

        *ret = m;
        if (ret_len)
                *ret_len = len;
        return 1;
}

bool message_reader_has_message(const MessageReader *r) {
        return r && (r->rpos < r->mstart || (r->n_oversize > 0 && r->oversize[0] == r->rpos));
}

bool message_reader_has_partial(const MessageReader *r) {
        return r && (r->skipping || r->wpos > r->mstart);
}

int message_serialize(json_object *o, size_t max_size, char **ret, size_t *ret_len) {
        const char *s;
        size_t len;
        char *m;

        assert(o);
        assert(ret);

        s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        if (!s)
                return -ENOMEM;
        if (len > max_size)
                return -EMSGSIZE;
        m = malloc(len + 1);
        if (!m)
                return -ENOMEM;
        memcpy(m, s, len + 1); /* includes the terminating NUL: that is the frame end */
        *ret = m;
        if (ret_len)
                *ret_len = len + 1;
        return 0;
}

struct MessageWriter {
        size_t max_pending;
        char *buf;
        size_t allocated, rpos, wpos;
        uint64_t written; /* bytes ever written; buf[rpos] is the byte at that position */
};

MessageWriter *message_writer_new(size_t max_pending) {
        MessageWriter *w;

        w = new0(MessageWriter, 1);
        if (!w)
                return NULL;
        w->max_pending = max_pending;
        return w;
}

MessageWriter *message_writer_free(MessageWriter *w) {
        if (!w)
                return NULL;
        free(w->buf);
        return mfree(w);
}

size_t message_writer_pending(const MessageWriter *w) {
        return w ? w->wpos - w->rpos : 0;
}

int message_writer_queue(MessageWriter *w, json_object *o) {
        _cleanup_free_ char *m = NULL;
        size_t len;
        int r;

        assert(w);

        r = message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len);
        if (r < 0)
                return r;
        if (message_writer_pending(w) + len > w->max_pending)
                return -ENOBUFS;
        if (w->rpos > 0) {
                memmove(w->buf, w->buf + w->rpos, w->wpos - w->rpos);
                w->wpos -= w->rpos;
                w->rpos = 0;
        }
        if (!GREEDY_REALLOC(w->buf, w->allocated, w->wpos + len))
                return -ENOMEM;
        memcpy(w->buf + w->wpos, m, len);
        w->wpos += len;
        return 0;
}

uint64_t message_writer_written(const MessageWriter *w) {
        return w ? w->written : 0;
}

uint64_t message_writer_queued(const MessageWriter *w) {
        return w ? w->written + (w->wpos - w->rpos) : 0;
}

int message_writer_flush_upto(MessageWriter *w, int fd, uint64_t upto) {
        assert(w);

        while (w->rpos < w->wpos && w->written < upto) {
                size_t n = (size_t) MIN((uint64_t) (w->wpos - w->rpos), upto - w->written);
                /* MSG_NOSIGNAL: a client that went away must not SIGPIPE the daemon. */
                ssize_t l = send(fd, w->buf + w->rpos, n, MSG_NOSIGNAL);
                if (l < 0 && errno == ENOTSOCK)
                        l = write(fd, w->buf + w->rpos, n);
                if (l < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                w->rpos += (size_t) l;
                w->written += (uint64_t) l;
        }
        if (w->rpos == w->wpos)
                w->rpos = w->wpos = 0;
        return 0;
}

int message_writer_flush(MessageWriter *w, int fd) {
        return message_writer_flush_upto(w, fd, UINT64_MAX);
}

void request_done(Request *req) {
        if (!req)
                return;
        req->method_name = mfree(req->method_name);
        json_object_put(req->parameters);
        req->parameters = NULL;
}

int request_parse(const char *text, size_t len, Request *req, CorralError *ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *method_name = NULL;
        json_object *params = NULL;
        bool more = false, oneway = false;
        int64_t version = CORRAL_PROTOCOL_VERSION;
        CorralMethod m;
        int r;

        assert(text);
        assert(req);

        *req = (Request) { .method = _CORRAL_METHOD_INVALID };

#define FAIL(err, code)                                                                    \
        do {                                                                               \
                if (ret_error)                                                             \
                        *ret_error = (err);                                                \
                return (code);                                                             \
        } while (0)

        r = json_parse_strict(text, len, &o);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || !json_object_is_type(o, json_type_object))
                FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);

        json_object_object_foreach(o, key, v) {
                if (streq(key, "method")) {
                        r = json_dup_string(v, 1, 256, &method_name);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);
                } else if (streq(key, "parameters")) {
                        if (!json_object_is_type(v, json_type_object))
                                FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);
                        params = v;
                } else if (streq(key, "more")) {
                        if (json_get_bool(v, &more) < 0)
                                FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);
                } else if (streq(key, "oneway")) {
                        if (json_get_bool(v, &oneway) < 0)
                                FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);
                } else if (streq(key, "protocol")) {
                        if (json_get_i64(v, 0, INT32_MAX, &version) < 0)
                                FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);
                } else
                        FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);
        }
        if (!method_name || (more && oneway))
                FAIL(CORRAL_ERROR_INVALID_REQUEST, -EBADMSG);
        if (version != CORRAL_PROTOCOL_VERSION)
                FAIL(CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH, -EPROTO);

        req->parameters = params ? json_object_get(params) : json_object_new_object();
        if (!req->parameters)
                return -ENOMEM;
        m = corral_method_from_string(method_name);
        req->method = m;
        req->method_name = TAKE_PTR(method_name);
        req->more = more;
        req->oneway = oneway;
        if (m < 0)
                FAIL(CORRAL_ERROR_METHOD_NOT_FOUND, -EOPNOTSUPP);
        return 0;
#undef FAIL
}

json_object *request_new(CorralMethod method, json_object *parameters, bool more) {
        _cleanup_json_ json_object *p = parameters, *o = NULL;

        if (!corral_method_to_string(method))
                return NULL;
        if (!p)
                p = json_object_new_object();
        o = json_object_new_object();
        if (!o || !p)
                return NULL;
        if (json_add_string(o, "method", corral_method_to_string(method)) < 0 ||
            json_add(o, "parameters", TAKE_PTR(p)) < 0 ||
            (more && json_add_bool(o, "more", true) < 0))
                return NULL;
        return TAKE_PTR(o);
}

json_object *reply_new(json_object *parameters, bool continues) {
        _cleanup_json_ json_object *p = parameters, *o = NULL;

        if (!p)
                p = json_object_new_object();
        o = json_object_new_object();
        if (!o || !p)
                return NULL;
        if (json_add(o, "parameters", TAKE_PTR(p)) < 0 ||
            (continues && json_add_bool(o, "continues", true) < 0))
                return NULL;
        return TAKE_PTR(o);
}

json_object *reply_error_new(CorralError error, json_object *parameters) {
        _cleanup_json_ json_object *p = parameters, *o = NULL;

        if (!corral_error_to_string(error))
                return NULL;
        if (!p)
                p = json_object_new_object();
        o = json_object_new_object();
        if (!o || !p)
                return NULL;
        if (json_add_string(o, "error", corral_error_to_string(error)) < 0 ||
            json_add(o, "parameters", TAKE_PTR(p)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static json_object *reply_error_with_string(CorralError error, const char *key, const char *value,
                                            const char *message) {
        _cleanup_json_ json_object *p = json_object_new_object();

        if (!p || json_add_string(p, key, value) < 0 || json_add_string(p, CORRAL_FIELD_MESSAGE, message) < 0)
                return NULL;
        return reply_error_new(error, TAKE_PTR(p));
}

json_object *reply_invalid_parameter(const char *parameter, const char *message) {
        return reply_error_with_string(CORRAL_ERROR_INVALID_PARAMETER, CORRAL_FIELD_PARAMETER, parameter, message);
}

json_object *reply_invalid_state(const char *state) {
        return reply_error_with_string(CORRAL_ERROR_INVALID_STATE, CORRAL_FIELD_STATE, state, NULL);
}

json_object *reply_invalid_request(const char *message) {
        return reply_error_with_string(CORRAL_ERROR_INVALID_REQUEST, CORRAL_FIELD_MESSAGE, message, NULL);
}

json_object *reply_method_not_found(const char *method) {
        return reply_error_with_string(CORRAL_ERROR_METHOD_NOT_FOUND, CORRAL_FIELD_METHOD, method, NULL);
}

json_object *reply_message_too_large(void) {
        _cleanup_json_ json_object *p = json_object_new_object();

        if (!p || json_add_u64(p, CORRAL_FIELD_LIMIT, CORRAL_MESSAGE_SIZE_MAX) < 0)
                return NULL;
        return reply_error_new(CORRAL_ERROR_MESSAGE_TOO_LARGE, TAKE_PTR(p));
}

json_object *reply_no_such_job(uint64_t job_id) {
        _cleanup_json_ json_object *p = json_object_new_object();

        if (!p || json_add_u64(p, CORRAL_FIELD_JOB_ID, job_id) < 0)
                return NULL;
        return reply_error_new(CORRAL_ERROR_NO_SUCH_JOB, TAKE_PTR(p));
}

json_object *reply_protocol_version_mismatch(int64_t client_version) {
        _cleanup_json_ json_object *p = json_object_new_object();

        if (!p || json_add_i64(p, "server", CORRAL_PROTOCOL_VERSION) < 0 ||
            json_add_i64(p, "client", client_version) < 0)
                return NULL;
        return reply_error_new(CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH, TAKE_PTR(p));
}

void reply_done(Reply *reply) {
        if (!reply)
                return;
        reply->error = mfree(reply->error);
        reply->warning = mfree(reply->warning);
        json_object_put(reply->parameters);
        reply->parameters = NULL;
}

int reply_parse(const char *text, size_t len, Reply *ret) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *error = NULL, *warning = NULL;
        json_object *params = NULL;
        bool continues = false;
        int r;

        assert(text);
        assert(ret);

        r = json_parse_strict(text, len, &o);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;

        /* Tolerant of keys we do not know: a newer server may add envelope fields. */
        json_object_object_foreach(o, key, v) {
                if (streq(key, "parameters")) {
                        if (!json_object_is_type(v, json_type_object))
                                return -EBADMSG;
                        params = v;
                } else if (streq(key, "error")) {
                        r = json_dup_string(v, 1, 256, &error);
                        if (r < 0)
                                return r == -ENOMEM ? r : -EBADMSG;
                } else if (streq(key, "continues")) {
                        if (json_get_bool(v, &continues) < 0)
                                return -EBADMSG;
                } else if (streq(key, CORRAL_FIELD_WARNING)) {
                        r = json_dup_string(v, 1, 4096, &warning);
                        if (r < 0)
                                return r == -ENOMEM ? r : -EBADMSG;
                }
        }

        *ret = (Reply) {
                .parameters = params ? json_object_get(params) : json_object_new_object(),
                .error = TAKE_PTR(error),
                .continues = continues,
                .warning = TAKE_PTR(warning),
        };
        if (!ret->parameters) {
                reply_done(ret);
                return -ENOMEM;
        }
        return 0;
}
