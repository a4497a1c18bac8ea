/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The protocol's framing and envelopes, as corrald reads them from any local user:
 * MessageReader takes the stream in chunks of every size, and each message it pops goes
 * through request_parse(), the parameter getters of every method, and reply_parse().
 *
 * Input: byte 0 picks the reader's size limit, byte 1 seeds how the rest (the stream) is
 * cut into feeds. Whatever the cuts, the reader must pop exactly what splitting the whole
 * stream at its NULs gives: each message byte for byte, an over-size one as -EMSGSIZE in
 * its place. */

#include <errno.h>

#include "fuzz.h"
#include "job-request.h"
#include "message.h"
#include "strv.h"

/* The parameters of each method as daemon/methods.c reads them. */
static void decode_parameters(CorralMethod m, json_object *params) {
        json_object *v;
        const char *s;
        uint64_t u;
        bool b;

        switch (m) {
        case CORRAL_METHOD_SUBMIT: {
                _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
                const char *bad = NULL;
                int r = submit_request_from_json(params, &req, &bad);
                fuzz_check(r == 0 || r == -ENOMEM || (r == -EINVAL && bad));
                break;
        }
        case CORRAL_METHOD_LIST: {
                _cleanup_strv_free_ char **states = NULL;
                if (json_object_object_get_ex(params, "user", &v))
                        (void) json_get_string(v, 1, CORRAL_IDENT_LENGTH_MAX, &s);
                if (json_object_object_get_ex(params, "queue", &v))
                        (void) json_get_string(v, 1, CORRAL_IDENT_LENGTH_MAX, &s);
                if (json_object_object_get_ex(params, "project", &v))
                        (void) json_get_string(v, 1, CORRAL_IDENT_LENGTH_MAX, &s);
                if (json_object_object_get_ex(params, "states", &v) &&
                    json_get_strv(v, 32, 32, &states) >= 0)
                        fuzz_check(strv_length(states) <= 32);
                if (json_object_object_get_ex(params, "after_id", &v))
                        (void) json_get_u64(v, 0, CORRAL_JOB_ID_MAX, &u);
                if (json_object_object_get_ex(params, "limit", &v) &&
                    json_get_u64(v, 1, CORRAL_LIST_JOBS_MAX, &u) >= 0)
                        fuzz_check(u >= 1 && u <= CORRAL_LIST_JOBS_MAX);
                break;
        }
        case CORRAL_METHOD_GET_INFO:
        case CORRAL_METHOD_RELOAD:
                break;
        default:
                if (json_object_object_get_ex(params, CORRAL_FIELD_JOB_ID, &v) &&
                    json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &u) >= 0)
                        fuzz_check(u >= 1 && u <= CORRAL_JOB_ID_MAX);
                if (m == CORRAL_METHOD_REQUEUE && json_object_object_get_ex(params, "hold", &v))
                        (void) json_get_bool(v, &b);
                if (m == CORRAL_METHOD_LOGS && json_object_object_get_ex(params, "lines", &v) &&
                    json_get_u64(v, 1, 1000000, &u) >= 0)
                        fuzz_check(u >= 1 && u <= 1000000);
                break;
        }
}

static void parse_message(const char *text, size_t len) {
        Request req = {};
        Reply reply = {};
        CorralError err = _CORRAL_ERROR_INVALID;
        int r;

        r = request_parse(text, len, &req, &err);
        if (r == 0) {
                fuzz_check(req.method >= 0 && req.method < _CORRAL_METHOD_MAX);
                fuzz_check(streq(req.method_name, corral_method_to_string(req.method)));
                fuzz_check(json_object_is_type(req.parameters, json_type_object));
                fuzz_check(!(req.more && req.oneway));
                decode_parameters(req.method, req.parameters);
        } else if (r == -EOPNOTSUPP) {
                fuzz_check(err == CORRAL_ERROR_METHOD_NOT_FOUND && req.method_name);
                fuzz_check(json_object_is_type(req.parameters, json_type_object));
        } else
                fuzz_check((r == -EBADMSG && err == CORRAL_ERROR_INVALID_REQUEST) ||
                           (r == -EPROTO && err == CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH) || r == -ENOMEM);
        request_done(&req);

        r = reply_parse(text, len, &reply);
        if (r == 0)
                fuzz_check(json_object_is_type(reply.parameters, json_type_object));
        else
                fuzz_check(r == -EBADMSG || r == -ENOMEM || r == -EMSGSIZE);
        reply_done(&reply);
}

/* The reference: the stream's NUL-separated pieces; the unterminated tail counts only when
 * it is already over size (the reader reports that without waiting for its NUL). */
typedef struct Expected {
        size_t offset, len;
        bool oversize;
} Expected;

static size_t split_stream(const uint8_t *s, size_t n, size_t max_size, Expected **ret, size_t *ret_tail) {
        Expected *e = calloc(n + 1, sizeof *e);
        size_t k = 0, start = 0;

        if (!e)
                abort();
        for (size_t i = 0; i < n; i++)
                if (s[i] == 0) {
                        e[k++] = (Expected) { start, i - start, i - start > max_size };
                        start = i + 1;
                }
        *ret_tail = n - start;
        if (n - start > max_size)
                e[k++] = (Expected) { start, n - start, true };
        *ret = e;
        return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const size_t limits[4] = { CORRAL_MESSAGE_SIZE_MAX, 4096, 100, 1 };
        static const size_t chunk_max[4] = { 1, 7, 300, SIZE_MAX };
        _cleanup_message_reader_ MessageReader *reader = NULL;
        _cleanup_free_ Expected *want = NULL;
        const uint8_t *stream;
        size_t n, max_size, cmax, n_want, tail, got = 0;
        uint32_t seed;

        if (size < 2)
                return 0;
        max_size = limits[data[0] & 3];
        cmax = chunk_max[(data[0] >> 2) & 3];
        seed = ((uint32_t) data[1] * 2654435761U) | 1; /* xorshift never leaves 0 */
        stream = data + 2;
        n = size - 2;

        n_want = split_stream(stream, n, max_size, &want, &tail);
        reader = message_reader_new(max_size);
        fuzz_check(reader);

        for (size_t pos = 0; pos <= n;) {
                size_t c;

                /* xorshift: cheap, and the same cuts for the same input. */
                seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
                c = cmax == SIZE_MAX ? n - pos : seed % (cmax + 1);
                if (c > n - pos)
                        c = n - pos;
                fuzz_check(message_reader_feed(reader, stream + pos, c) == 0);
                pos += c;

                for (;;) {
                        _cleanup_free_ char *m = NULL;
                        size_t len = SIZE_MAX;
                        int r = message_reader_next(reader, &m, &len);

                        if (r == 0)
                                break;
                        fuzz_check(got < n_want);
                        if (r == -EMSGSIZE)
                                fuzz_check(want[got].oversize);
                        else {
                                fuzz_check(r == 1 && !want[got].oversize);
                                fuzz_check(len == want[got].len && m[len] == 0);
                                fuzz_check(memcmp(m, stream + want[got].offset, len) == 0);
                                parse_message(m, len);
                        }
                        got++;
                }
                if (pos == n)
                        break;
        }
        fuzz_check(got == n_want);
        fuzz_check(message_reader_has_partial(reader) == (tail > 0));
        return 0;
}
