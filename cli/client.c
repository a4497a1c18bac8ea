/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli-util.h"
#include "client.h"
#include "errno-util.h"
#include "fd-util.h"
#include "log.h"

struct Client {
        int fd;
        char *path;
        MessageReader *reader;
};

const char *client_socket_path(void) {
        const char *e = getenv("CORRAL_SOCKET");
        return isempty(e) ? CORRAL_SOCKET_PATH : e;
}

static int64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline (< 0: none), as poll() takes them. */
static int remaining_ms(int64_t deadline) {
        int64_t left;

        if (deadline < 0)
                return -1;
        left = deadline - now_ms();
        return (int) CLAMP(left, (int64_t) 0, (int64_t) INT32_MAX);
}

static int wait_fd(int fd, short events, int64_t deadline) {
        struct pollfd p = { .fd = fd, .events = events };

        for (;;) {
                int r = poll(&p, 1, remaining_ms(deadline));
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (r == 0)
                        return -ETIMEDOUT;
                return 0;
        }
}

int client_connect(const char *path, int timeout_ms, Client **ret) {
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
        } addr = { .un.sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
        Client *c;
        int r;

        assert(path);
        assert(ret);

        if (strlen(path) >= sizeof(addr.un.sun_path))
                return -ENAMETOOLONG;
        strcpy(addr.un.sun_path, path);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;

        for (;;) {
                if (connect(fd, &addr.sa, sizeof(addr.un)) >= 0)
                        break;
                if (errno == EINTR)
                        continue;
                if (errno == EINPROGRESS) {
                        socklen_t len = sizeof(r);

                        r = wait_fd(fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &len) < 0)
                                return -errno;
                        if (r != 0)
                                return -r;
                        break;
                }
                /* A full listen backlog: unix sockets say EAGAIN rather than wait, and
                 * cannot be polled for it, so retry until the deadline. */
                if (errno == EAGAIN) {
                        if (deadline >= 0 && now_ms() >= deadline)
                                return -ETIMEDOUT;
                        (void) usleep(10 * 1000);
                        continue;
                }
                return -errno;
        }

        c = new0(Client, 1);
        if (!c)
                return -ENOMEM;
        c->fd = TAKE_FD(fd);
        c->path = strdup(path);
        c->reader = message_reader_new(CORRAL_MESSAGE_SIZE_MAX);
        if (!c->path || !c->reader) {
                client_free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

Client *client_free(Client *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        free(c->path);
        message_reader_free(c->reader);
        return mfree(c);
}

const char *client_path(const Client *c) {
        return c ? c->path : NULL;
}

int client_send(Client *c, CorralMethod method, json_object *parameters, bool more, int timeout_ms) {
        return client_send_fds(c, method, parameters, more, NULL, 0, timeout_ms);
}

int client_fd(const Client *c) {
        return c ? c->fd : -EBADF;
}

int client_send_fds(Client *c, CorralMethod method, json_object *parameters, bool more, const int *fds,
                    size_t n_fds, int timeout_ms) {
        _cleanup_json_ json_object *req = NULL;
        _cleanup_free_ char *buf = NULL;
        int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
        size_t len, done = 0;
        int r;

        assert(c);

        req = request_new(method, parameters, more);
        if (!req)
                return -ENOMEM;
        r = message_serialize(req, CORRAL_MESSAGE_SIZE_MAX, &buf, &len);
        if (r < 0)
                return r;

        assert(n_fds <= CORRAL_RUN_FDS);
        while (done < len) {
                union {
                        struct cmsghdr cmsg;
                        char buf[CMSG_SPACE(sizeof(int) * CORRAL_RUN_FDS)];
                } control = {};
                struct iovec iov = { .iov_base = buf + done, .iov_len = len - done };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
                ssize_t n;

                /* The descriptors go with the request's first byte (daemon/server.c). */
                if (done == 0 && n_fds > 0) {
                        mh.msg_control = &control;
                        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                        control.cmsg.cmsg_level = SOL_SOCKET;
                        control.cmsg.cmsg_type = SCM_RIGHTS;
                        control.cmsg.cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                        memcpy(CMSG_DATA(&control.cmsg), fds, sizeof(int) * n_fds);
                }
                n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        r = wait_fd(c->fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                done += (size_t) n;
        }
        return 0;
}

int client_receive(Client *c, int timeout_ms, Reply *ret) {
        int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
        int r;

        assert(c);
        assert(ret);

        for (;;) {
                _cleanup_free_ char *text = NULL;
                size_t len;

                r = message_reader_next(c->reader, &text, &len);
                if (r < 0)
                        return r;
                if (r > 0)
                        return reply_parse(text, len, ret);

                r = message_reader_fill(c->reader, c->fd);
                if (r == -EAGAIN || r == -EINTR) {
                        r = wait_fd(c->fd, POLLIN, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (r < 0)
                        return r;
                if (r == 0)
                        return -ECONNRESET;
        }
}

void cli_done(Cli *cli) {
        if (cli)
                cli->client = client_free(cli->client);
}

static const char *cli_path(const Cli *cli) {
        return cli->socket_path ?: client_socket_path();
}

static int cli_ensure_connected(Cli *cli) {
        const char *path = cli_path(cli);
        int r;

        if (cli->client)
                return 0;
        r = client_connect(path, cli->timeout_ms, &cli->client);
        if (r == -ENOMEM)
                return log_oom();
        if (r == -ETIMEDOUT)
                return log_error_errno(r, "cannot connect to corrald at %s: no answer within %d s "
                                       "(is corrald hung? systemctl status corrald)",
                                       path, cli->timeout_ms / 1000);
        if (r == -EACCES || r == -EPERM)
                return log_error_errno(r, "cannot connect to corrald at %s: %m "
                                       "(check the socket's permissions: ls -l %s)", path, path);
        if (r < 0)
                return log_error_errno(r, "cannot connect to corrald at %s: %m "
                                       "(is corrald.socket running? systemctl status corrald.socket)", path);
        return 0;
}

static int log_transport_error(const Cli *cli, int r) {
        const char *path = cli_path(cli);

        switch (r) {
        case -ENOMEM:
                return log_oom();
        case -ETIMEDOUT:
                return log_error_errno(r, "corrald at %s did not answer within %d s "
                                       "(is it overloaded or hung? systemctl status corrald)",
                                       path, cli->timeout_ms / 1000);
        case -ECONNRESET:
        case -EPIPE:
                return log_error_errno(r, "corrald at %s closed the connection "
                                       "(did it restart or crash? journalctl -u corrald)", path);
        case -EMSGSIZE:
                return log_error_errno(r, "message exceeds the protocol's limit of %" PRIu64 " bytes "
                                       "(a huge environment? try --export=NONE or fewer variables)",
                                       CORRAL_MESSAGE_SIZE_MAX);
        case -EBADMSG:
                return log_error_errno(r, "corrald at %s sent a malformed reply "
                                       "(are corral and corrald the same version? corral --version)", path);
        default:
                return log_error_errno(r, "cannot talk to corrald at %s: %m", path);
        }
}

int cli_send(Cli *cli, CorralMethod method, json_object *parameters, bool more) {
        _cleanup_json_ json_object *p = parameters;
        int r;

        r = cli_ensure_connected(cli);
        if (r < 0)
                return r;
        r = client_send(cli->client, method, TAKE_PTR(p), more, cli->timeout_ms);
        if (r < 0)
                return log_transport_error(cli, r);
        return 0;
}

int cli_receive(Cli *cli, int timeout_ms, Reply *ret) {
        int r;

        assert(cli->client);
        r = client_receive(cli->client, timeout_ms, ret);
        if (r < 0)
                return log_transport_error(cli, r);
        /* Once per command, whatever the command: an admin who never runs corral info
         * still learns that corrald does not run on the files on disk. */
        if (ret->warning && !cli->warned) {
                cli->warned = true;
                log_warning("warning: %s", ret->warning);
        }
        return 0;
}

int cli_call(Cli *cli, CorralMethod method, json_object *parameters, Reply *ret) {
        _cleanup_json_ json_object *p = parameters;
        int r;

        r = cli_ensure_connected(cli);
        if (r < 0)
                return r;
        r = client_send(cli->client, method, TAKE_PTR(p), false, cli->timeout_ms);
        /* A connection over a limit is answered with the reason and closed at once, so our
         * request may meet a closed socket: the answer is still there to read. */
        if ((r == -EPIPE || r == -ECONNRESET) && client_receive(cli->client, 1000, ret) >= 0)
                return 0;
        if (r < 0)
                return log_transport_error(cli, r);
        return cli_receive(cli, cli->timeout_ms, ret);
}

int cli_call_list_page(Cli *cli, json_object *filter, uint64_t after, uint64_t max, Reply *ret) {
        _cleanup_json_ json_object *f = filter, *all = NULL;
        uint64_t n_all = 0, next_after = 0;
        int r;

        for (;;) {
                _cleanup_(reply_done) Reply page = {};
                json_object *fc = NULL, *jobs, *next, *into;
                uint64_t n;

                if (json_object_deep_copy(f, &fc, NULL) < 0 || (after && json_add_u64(fc, "after_id", after) < 0) ||
                    (max > 0 && json_add_u64(fc, "limit", MIN(max - n_all, (uint64_t) CORRAL_LIST_JOBS_MAX)) < 0)) {
                        json_object_put(fc);
                        return -ENOMEM;
                }
                r = cli_call(cli, CORRAL_METHOD_LIST, fc, &page);
                if (r < 0)
                        return r;
                if (page.error || !json_object_object_get_ex(page.parameters, "jobs", &jobs) ||
                    !json_object_is_type(jobs, json_type_array)) {
                        /* An error, or a reply the caller will find malformed: as it came. */
                        *ret = page;
                        page = (Reply) {};
                        return 0;
                }
                n_all += json_object_array_length(jobs);
                if (!all)
                        all = json_object_get(page.parameters);
                else if (json_object_object_get_ex(all, "jobs", &into))
                        for (size_t i = 0, k = json_object_array_length(jobs); i < k; i++)
                                if (json_object_array_add(into, json_object_get(json_object_array_get_idx(jobs, i))) < 0)
                                        return -ENOMEM;
                if (!json_object_object_get_ex(page.parameters, "next_after_id", &next))
                        break;
                /* Pages move forward or it is not a list we can trust to end. */
                if (json_get_u64(next, after + 1, CORRAL_JOB_ID_MAX, &n) < 0)
                        return -EBADMSG;
                after = n;
                /* As many as asked for: where the next page would start is the caller's. */
                if (max > 0 && n_all >= max) {
                        next_after = n;
                        break;
                }
        }
        json_object_object_del(all, "next_after_id");
        if (next_after > 0 && json_add_u64(all, "next_after_id", next_after) < 0)
                return -ENOMEM;
        *ret = (Reply) { .parameters = TAKE_PTR(all) };
        return 0;
}

int cli_call_list(Cli *cli, json_object *filter, Reply *ret) {
        return cli_call_list_page(cli, filter, 0, 0, ret);
}

int cli_exit_status_from_errno(int r) {
        return r == -ENOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_UNREACHABLE;
}

static const char *param_string(const Reply *reply, const char *key) {
        json_object *v;

        if (!reply->parameters || !json_object_object_get_ex(reply->parameters, key, &v) ||
            !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool param_i64(const Reply *reply, const char *key, int64_t *ret) {
        json_object *v;

        if (!reply->parameters || !json_object_object_get_ex(reply->parameters, key, &v) ||
            !json_object_is_type(v, json_type_int))
                return false;
        *ret = json_object_get_int64(v);
        return true;
}

/* Which states a verb needs, for InvalidState's hint. */
static const char *verb_state_hint(const char *verb) {
        static const struct {
                const char *verb, *hint;
        } hints[] = {
                { "cancel", "it has already ended" },
                { "hold", "only pending jobs can be held" },
                { "release", "only held jobs can be released" },
                { "suspend", "only running jobs can be suspended" },
                { "resume", "only suspended jobs can be resumed" },
                { "signal", "only running jobs can be signalled" },
                { "requeue", "only running, suspended or finished jobs can be requeued" },
        };

        for (size_t i = 0; verb && i < ELEMENTSOF(hints); i++)
                if (streq(hints[i].verb, verb))
                        return hints[i].hint;
        return NULL;
}

static const char *verb_permission_hint(const char *verb) {
        if (!verb)
                return NULL;
        if (streq(verb, "reload"))
                return "reloading the configuration needs root or the operator group";
        if (streq(verb, "suspend") || streq(verb, "resume"))
                return "suspending and resuming is for administrators unless the configuration allows users";
        if (streq(verb, "release"))
                return "you can only release your own jobs, and a hold placed by an administrator only an administrator can release";
        if (streq(verb, "submit"))
                return "this queue or project may not be open to you";
        return NULL;
}

char *cli_error_message(const char *verb, const char *subject, const Reply *reply) {
        _cleanup_free_ char *what = NULL, *params = NULL;
        const char *name, *s, *m;
        CorralError e;
        int64_t n, n2;
        char *out;
        int r = 0;

        assert(reply);
        assert(reply->error);

        name = reply->error;
        e = corral_error_from_string(name);
        m = param_string(reply, CORRAL_FIELD_MESSAGE);

        switch (e) {
        case CORRAL_ERROR_INVALID_PARAMETER:
                s = param_string(reply, CORRAL_FIELD_PARAMETER);
                r = asprintf(&what, "invalid %s%s%s", s ? "parameter '" : "parameter", strempty(s), s ? "'" : "");
                if (r >= 0 && m) {
                        char *w;
                        r = asprintf(&w, "%s: %s", what, m);
                        free(what);
                        what = r >= 0 ? w : NULL;
                }
                break;
        case CORRAL_ERROR_NO_SUCH_JOB:
                r = asprintf(&what, "no such job (it may have finished and been purged; corral queue --all)");
                break;
        case CORRAL_ERROR_PERMISSION_DENIED: {
                /* corrald knows which rule refused; our guess by verb is the fallback. */
                const char *hint = m ?: verb_permission_hint(verb);
                if (hint)
                        r = asprintf(&what, "permission denied (%s)", hint);
                else if (verb)
                        r = asprintf(&what, "permission denied (you can only %s your own jobs)", verb);
                else
                        r = asprintf(&what, "permission denied");
                break;
        }
        case CORRAL_ERROR_INVALID_STATE: {
                const char *hint = verb_state_hint(verb);
                s = param_string(reply, CORRAL_FIELD_STATE);
                r = asprintf(&what, "cannot %s a job that is %s%s%s%s", verb ?: "act on", s ?: "in this state",
                             hint ? " (" : "", strempty(hint), hint ? ")" : "");
                break;
        }
        case CORRAL_ERROR_MESSAGE_TOO_LARGE:
                r = param_i64(reply, CORRAL_FIELD_LIMIT, &n)
                            ? asprintf(&what, "request too large for corrald (limit %" PRIi64 " bytes; "
                                       "a huge script or environment? try --export=NONE)", n)
                            : asprintf(&what, "request too large for corrald (a huge script or environment? "
                                       "try --export=NONE)");
                break;
        case CORRAL_ERROR_TOO_MANY_CONNECTIONS:
                s = param_string(reply, CORRAL_FIELD_MESSAGE);
                r = asprintf(&what, "%s; try again shortly", s ?: "corrald has too many connections open");
                break;
        case CORRAL_ERROR_METHOD_NOT_FOUND:
                s = param_string(reply, CORRAL_FIELD_METHOD);
                r = asprintf(&what, "corrald does not know %s (is corrald older than corral %s? "
                             "compare with corral info)", s ?: "this method", PACKAGE_VERSION);
                break;
        case CORRAL_ERROR_INVALID_REQUEST:
                r = asprintf(&what, "corrald rejected the request as malformed%s%s (a corral/corrald "
                             "version mismatch? corral info)", m ? ": " : "", strempty(m));
                break;
        case CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH:
                if (param_i64(reply, "server", &n) && param_i64(reply, "client", &n2))
                        r = asprintf(&what, "corrald speaks protocol %" PRIi64 ", this corral %" PRIi64
                                     " (install matching versions)", n, n2);
                else
                        r = asprintf(&what, "protocol version mismatch (install matching corral and corrald)");
                break;
        case CORRAL_ERROR_BUSY:
                r = asprintf(&what, "corrald is busy (reloading?); try again shortly");
                break;
        case CORRAL_ERROR_NO_PROJECT:
                s = param_string(reply, CORRAL_FIELD_MESSAGE);
                r = asprintf(&what, "%s", s ?: "you belong to no project (ask an administrator)");
                break;
        case CORRAL_ERROR_QUOTA_EXCEEDED:
                /* corrald names the bound (MaxArraySize=, ...); older ones only its value. */
                if ((s = param_string(reply, CORRAL_FIELD_MESSAGE))) {
                        r = asprintf(&what, "%s", s);
                        break;
                }
                r = param_i64(reply, CORRAL_FIELD_LIMIT, &n)
                            ? asprintf(&what, "job limit reached (at most %" PRIi64 " jobs per user; "
                                       "wait for some to finish)", n)
                            : asprintf(&what, "job limit reached (wait for some of your jobs to finish)");
                break;
        case CORRAL_ERROR_INTERNAL_ERROR:
                r = asprintf(&what, "corrald failed internally%s%s (see journalctl -u corrald)", m ? ": " : "",
                             strempty(m));
                break;
        default:
                params = strdup(reply->parameters ? json_object_to_json_string_ext(reply->parameters,
                                                                                   JSON_C_TO_STRING_PLAIN)
                                                  : "{}");
                if (!params)
                        return NULL;
                r = asprintf(&what, "corrald answered %s %s", name, params);
                break;
        }
        if (r < 0 || !what)
                return NULL;

        if (subject)
                r = asprintf(&out, "%s: %s", subject, what);
        else if (verb)
                r = asprintf(&out, "%s: %s", verb, what);
        else
                return TAKE_PTR(what);
        return r < 0 ? NULL : out;
}

int cli_error_exit_status(const Reply *reply) {
        switch (corral_error_from_string(reply->error)) {
        case CORRAL_ERROR_INVALID_PARAMETER:
                return CLI_EXIT_USAGE;
        case CORRAL_ERROR_BUSY:
        case CORRAL_ERROR_TOO_MANY_CONNECTIONS:
                return CLI_EXIT_UNREACHABLE;
        default:
                return CLI_EXIT_FAILURE;
        }
}

int cli_report_error(const Cli *cli, const char *subject, const Reply *reply) {
        _cleanup_free_ char *msg = cli_error_message(cli->verb, subject, reply);

        if (!msg) {
                log_oom();
                return CLI_EXIT_FAILURE;
        }
        log_error("%s", msg);
        return cli_error_exit_status(reply);
}

int cli_call_reply(Cli *cli, CorralMethod method, json_object *parameters, const char *subject, Reply *ret) {
        int r;

        r = cli_call(cli, method, parameters, ret);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (ret->error)
                return cli_report_error(cli, subject, ret);
        return 0;
}

int cli_print_json_status(json_object *v) {
        return cli_print_json(v) < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
}

int cli_print_json(json_object *v) {
        int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
                    (isatty(STDOUT_FILENO) ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);
        const char *s = json_object_to_json_string_ext(v, flags);

        if (!s)
                return log_oom();
        if (puts(s) == EOF)
                return -EIO;
        return 0;
}

int cli_oom(void) {
        log_oom();
        return CLI_EXIT_FAILURE;
}
