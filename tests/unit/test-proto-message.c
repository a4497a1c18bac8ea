/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "proto/message.h"

static void send_fds(int sock, const int *fds, size_t n) {
        char buf[CMSG_SPACE(sizeof(int) * 16)] = {};
        struct iovec iov = { .iov_base = (char *) "{}", .iov_len = 3 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf,
                             .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        assert_int_equal(sendmsg(sock, &mh, 0), 3);
}

/* Descriptors are handed to the caller, every one, even with an error: closing one may
 * wait (a FUSE server's FLUSH, a socket's linger), so the reader never does. */
static void test_fill_fds_returns_all(void **state) {
        int s[2], p[2], fds[MESSAGE_RECV_FDS_MAX];
        int twelve[12];
        size_t n = 99;
        MessageReader *r;

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        r = message_reader_new(4096);
        assert_non_null(r);

        /* Three: taken. */
        send_fds(s[0], (int[]) { p[0], p[1], p[1] }, 3);
        assert_int_equal(message_reader_fill_fds(r, s[1], fds, 3, &n), 3);
        assert_int_equal(n, 3);
        for (size_t i = 0; i < n; i++)
                safe_close(fds[i]);

        /* Twelve, where three are allowed: refused, and all twelve handed back open. */
        for (size_t i = 0; i < 12; i++)
                twelve[i] = p[i % 2];
        send_fds(s[0], twelve, 12);
        assert_int_equal(message_reader_fill_fds(r, s[1], fds, 3, &n), -ETOOMANYREFS);
        assert_int_equal(n, 12);
        for (size_t i = 0; i < n; i++) {
                assert_true(fcntl(fds[i], F_GETFD) >= 0);
                assert_true(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
                safe_close(fds[i]);
        }
        message_reader_free(r);
        close(s[0]);
        close(s[1]);
        close(p[0]);
        close(p[1]);
}

static void test_method_and_error_names(void **state) {
        assert_string_equal(corral_method_to_string(CORRAL_METHOD_SUBMIT), "io.corral.Manager.Submit");
        assert_string_equal(corral_method_to_string(CORRAL_METHOD_GET_INFO), "io.corral.Manager.GetInfo");
        assert_int_equal(corral_method_from_string("io.corral.Manager.Wait"), CORRAL_METHOD_WAIT);
        assert_int_equal(corral_method_from_string("io.corral.Manager.wait"), -EINVAL);
        for (int i = 0; i < _CORRAL_METHOD_MAX; i++)
                assert_non_null(corral_method_to_string(i));
        for (int i = 0; i < _CORRAL_ERROR_MAX; i++)
                assert_true(strneq(corral_error_to_string(i), CORRAL_INTERFACE ".", strlen(CORRAL_INTERFACE) + 1));
        assert_string_equal(corral_error_to_string(CORRAL_ERROR_NO_SUCH_JOB), "io.corral.Manager.NoSuchJob");
}

static void feed_str(MessageReader *r, const char *s, size_t n) {
        assert_int_equal(message_reader_feed(r, s, n), 0);
}

static void expect_msg(MessageReader *r, const char *want) {
        _cleanup_free_ char *m = NULL;
        size_t len;

        assert_int_equal(message_reader_next(r, &m, &len), 1);
        assert_string_equal(m, want);
        assert_int_equal(len, strlen(want));
}

static void test_reader_partial_and_multiple(void **state) {
        _cleanup_message_reader_ MessageReader *r = message_reader_new(64);
        static const char stream[] = "{\"a\":1}\0{\"b\":2}\0{\"c\":3}";
        char *m = NULL;

        assert_non_null(r);
        assert_int_equal(message_reader_next(r, &m, NULL), 0);

        /* Byte by byte: nothing until the NUL. */
        for (size_t i = 0; i < 7; i++) {
                feed_str(r, stream + i, 1);
                assert_int_equal(message_reader_next(r, &m, NULL), 0);
                assert_true(message_reader_has_partial(r));
                assert_false(message_reader_has_message(r));
        }
        feed_str(r, stream + 7, 1);
        assert_false(message_reader_has_partial(r));
        assert_true(message_reader_has_message(r));
        expect_msg(r, "{\"a\":1}");
        assert_false(message_reader_has_message(r));
        assert_int_equal(message_reader_next(r, &m, NULL), 0);

        /* The second whole plus part of the third in one feed. */
        feed_str(r, stream + 8, sizeof(stream) - 1 - 8 - 3);
        expect_msg(r, "{\"b\":2}");
        assert_int_equal(message_reader_next(r, &m, NULL), 0);
        feed_str(r, stream + sizeof(stream) - 1 - 3, 3);
        assert_int_equal(message_reader_next(r, &m, NULL), 0);
        feed_str(r, "\0", 1);
        expect_msg(r, "{\"c\":3}");

        /* Several complete ones in one feed, not drained in between. */
        feed_str(r, "x\0y\0", 4);
        feed_str(r, "z\0", 2);
        expect_msg(r, "x");
        expect_msg(r, "y");
        expect_msg(r, "z");
        assert_int_equal(message_reader_next(r, &m, NULL), 0);

        /* An empty message is a message (request_parse rejects it). */
        feed_str(r, "\0", 1);
        expect_msg(r, "");
}

static void test_reader_oversize(void **state) {
        _cleanup_message_reader_ MessageReader *r = message_reader_new(8);
        char big[100];
        char *m = NULL;

        memset(big, 'x', sizeof(big));

        /* Exactly max is fine. */
        feed_str(r, "12345678\0", 9);
        expect_msg(r, "12345678");

        /* One more is not; replies keep stream order around it. */
        feed_str(r, "ok1\0" "123456789\0" "ok2\0", 4 + 10 + 4);
        expect_msg(r, "ok1");
        assert_true(message_reader_has_message(r)); /* its report */
        assert_int_equal(message_reader_next(r, &m, NULL), -EMSGSIZE);
        expect_msg(r, "ok2");
        assert_int_equal(message_reader_next(r, &m, NULL), 0);

        /* A huge message across many feeds is skipped without being kept. */
        feed_str(r, "abc", 3);
        for (int i = 0; i < 1000; i++)
                feed_str(r, big, sizeof(big));
        assert_true(message_reader_has_partial(r));
        assert_int_equal(message_reader_next(r, &m, NULL), -EMSGSIZE);
        assert_int_equal(message_reader_next(r, &m, NULL), 0);
        feed_str(r, big, 5);
        feed_str(r, "\0after\0", 7);
        assert_false(message_reader_has_partial(r));
        expect_msg(r, "after");
        assert_int_equal(message_reader_next(r, &m, NULL), 0);

        /* Over-size split exactly at the limit across feeds. */
        feed_str(r, "1234", 4);
        feed_str(r, "5678", 4);
        feed_str(r, "9", 1);
        feed_str(r, "\0z\0", 3);
        assert_int_equal(message_reader_next(r, &m, NULL), -EMSGSIZE);
        expect_msg(r, "z");
}

static void test_writer_and_fill(void **state) {
        _cleanup_message_writer_ MessageWriter *w = message_writer_new(1 << 16);
        _cleanup_message_reader_ MessageReader *r = message_reader_new(CORRAL_MESSAGE_SIZE_MAX);
        _cleanup_json_ json_object *o = NULL;
        int fds[2];
        char *m = NULL;

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);

        o = reply_new(NULL, true);
        assert_int_equal(message_writer_queue(w, o), 0);
        assert_int_equal(message_writer_queue(w, o), 0);
        assert_int_equal(message_writer_pending(w), 2 * (strlen("{\"parameters\":{},\"continues\":true}") + 1));
        assert_int_equal(message_writer_flush(w, fds[0]), 0);
        assert_int_equal(message_writer_pending(w), 0);

        assert_true(message_reader_fill(r, fds[1]) > 0);
        expect_msg(r, "{\"parameters\":{},\"continues\":true}");
        expect_msg(r, "{\"parameters\":{},\"continues\":true}");
        assert_int_equal(message_reader_next(r, &m, NULL), 0);

        /* The writer's bound. */
        {
                _cleanup_message_writer_ MessageWriter *small = message_writer_new(40);
                assert_int_equal(message_writer_queue(small, o), 0);
                assert_int_equal(message_writer_queue(small, o), -ENOBUFS);
        }

        safe_close(fds[0]);
        assert_int_equal(message_reader_fill(r, fds[1]), 0);
        safe_close(fds[1]);
}

static void test_serialize_limit(void **state) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *big = malloc(CORRAL_MESSAGE_SIZE_MAX + 1), *m = NULL;
        size_t len;

        memset(big, 'a', CORRAL_MESSAGE_SIZE_MAX);
        big[CORRAL_MESSAGE_SIZE_MAX] = 0;
        assert_int_equal(json_add_string(o, "s", big), 0);
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), -EMSGSIZE);
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX + 100, &m, &len), 0);
        assert_int_equal(m[len - 1], 0);
        assert_int_equal(len, CORRAL_MESSAGE_SIZE_MAX + strlen("{\"s\":\"\"}") + 1);
}

static void test_request_parse_ok(void **state) {
        static const char *text = "{\"method\":\"io.corral.Manager.Wait\",\"parameters\":{\"job_id\":7},\"more\":true}";
        Request req;
        CorralError e = -1;

        assert_int_equal(request_parse(text, strlen(text), &req, &e), 0);
        assert_int_equal(req.method, CORRAL_METHOD_WAIT);
        assert_true(req.more);
        assert_false(req.oneway);
        assert_int_equal(json_object_get_int(json_object_object_get(req.parameters, "job_id")), 7);
        request_done(&req);

        /* No parameters: an empty object; a matching protocol version is fine. */
        text = "{\"method\":\"io.corral.Manager.GetInfo\",\"protocol\":1}";
        assert_int_equal(request_parse(text, strlen(text), &req, &e), 0);
        assert_true(json_object_is_type(req.parameters, json_type_object));
        assert_int_equal(json_object_object_length(req.parameters), 0);
        request_done(&req);
}

static void test_request_parse_errors(void **state) {
        static const struct {
                const char *text;
                int r;
                CorralError error;
        } t[] = {
                { "", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "not json", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "[1,2]", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "\"io.corral.Manager.List\"", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"parameters\":{}}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":1}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"\"}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\\u0000x\"}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\",\"parameters\":[]}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\",\"parameters\":null}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\",\"more\":\"yes\"}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\",\"more\":true,\"oneway\":true}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\",\"extra\":1}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\"} trailing", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\",\"protocol\":\"1\"}", -EBADMSG, CORRAL_ERROR_INVALID_REQUEST },
                { "{\"method\":\"io.corral.Manager.List\",\"protocol\":2}", -EPROTO, CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH },
                { "{\"method\":\"io.corral.Manager.Frobnicate\"}", -EOPNOTSUPP, CORRAL_ERROR_METHOD_NOT_FOUND },
                { "{\"method\":\"org.varlink.service.GetInfo\"}", -EOPNOTSUPP, CORRAL_ERROR_METHOD_NOT_FOUND },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                Request req;
                CorralError e = -1;

                assert_int_equal(request_parse(t[i].text, strlen(t[i].text), &req, &e), t[i].r);
                assert_int_equal(e, t[i].error);
                if (t[i].r == -EOPNOTSUPP)
                        assert_non_null(req.method_name);
                request_done(&req);
        }
}

static void test_request_and_reply_build(void **state) {
        _cleanup_json_ json_object *p = json_object_new_object(), *o = NULL;
        _cleanup_free_ char *m = NULL;
        Request req;
        Reply reply;
        size_t len;

        assert_int_equal(json_add_u64(p, "job_id", 42), 0);
        o = request_new(CORRAL_METHOD_CANCEL, TAKE_PTR(p), false);
        assert_non_null(o);
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), 0);
        assert_string_equal(m, "{\"method\":\"io.corral.Manager.Cancel\",\"parameters\":{\"job_id\":42}}");
        assert_int_equal(request_parse(m, len - 1, &req, NULL), 0);
        assert_int_equal(req.method, CORRAL_METHOD_CANCEL);
        request_done(&req);

        json_object_put(o);
        m = mfree(m);
        o = reply_invalid_parameter("cpus", "must be 1..4096");
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), 0);
        assert_string_equal(m, "{\"error\":\"io.corral.Manager.InvalidParameter\","
                               "\"parameters\":{\"parameter\":\"cpus\",\"message\":\"must be 1..4096\"}}");
        assert_int_equal(reply_parse(m, len - 1, &reply), 0);
        assert_string_equal(reply.error, "io.corral.Manager.InvalidParameter");
        assert_string_equal(json_object_get_string(json_object_object_get(reply.parameters, "parameter")), "cpus");
        assert_false(reply.continues);
        reply_done(&reply);

        json_object_put(o);
        m = mfree(m);
        o = reply_invalid_state("RUNNING");
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), 0);
        assert_string_equal(m, "{\"error\":\"io.corral.Manager.InvalidState\",\"parameters\":{\"state\":\"RUNNING\"}}");

        json_object_put(o);
        m = mfree(m);
        o = reply_no_such_job(9);
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), 0);
        assert_string_equal(m, "{\"error\":\"io.corral.Manager.NoSuchJob\",\"parameters\":{\"job_id\":9}}");

        json_object_put(o);
        m = mfree(m);
        o = reply_message_too_large();
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), 0);
        assert_string_equal(m, "{\"error\":\"io.corral.Manager.MessageTooLarge\",\"parameters\":{\"limit\":1048576}}");

        json_object_put(o);
        m = mfree(m);
        o = reply_protocol_version_mismatch(3);
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), 0);
        assert_string_equal(m, "{\"error\":\"io.corral.Manager.ProtocolVersionMismatch\",\"parameters\":{\"server\":1,\"client\":3}}");

        json_object_put(o);
        m = mfree(m);
        o = reply_new(NULL, true);
        assert_int_equal(message_serialize(o, CORRAL_MESSAGE_SIZE_MAX, &m, &len), 0);
        assert_int_equal(reply_parse(m, len - 1, &reply), 0);
        assert_null(reply.error);
        assert_true(reply.continues);
        assert_null(reply.warning);
        reply_done(&reply);

        /* The daemon's warning, on any reply (the configuration on disk does not load). */
        {
                const char *w = "{\"parameters\":{},\"warning\":\"corral.conf:3: bad\"}";
                assert_int_equal(reply_parse(w, strlen(w), &reply), 0);
                assert_string_equal(reply.warning, "corral.conf:3: bad");
                reply_done(&reply);
                assert_null(reply.warning);
                w = "{\"parameters\":{},\"warning\":3}";
                assert_int_equal(reply_parse(w, strlen(w), &reply), -EBADMSG);
        }

        /* Malformed replies. */
        assert_int_equal(reply_parse("[]", 2, &reply), -EBADMSG);
        assert_int_equal(reply_parse("{\"error\":5}", 11, &reply), -EBADMSG);
        assert_int_equal(reply_parse("{\"parameters\":1}", 16, &reply), -EBADMSG);
        assert_int_equal(reply_parse("{", 1, &reply), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_method_and_error_names),
                cmocka_unit_test(test_reader_partial_and_multiple),
                cmocka_unit_test(test_reader_oversize),
                cmocka_unit_test(test_writer_and_fill),
                cmocka_unit_test(test_serialize_limit),
                cmocka_unit_test(test_request_parse_ok),
                cmocka_unit_test(test_request_parse_errors),
                cmocka_unit_test(test_request_and_reply_build),
                cmocka_unit_test(test_fill_fds_returns_all),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
