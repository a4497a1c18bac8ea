/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "authz.h"
#include "errno-util.h"
#include "fd-util.h"
#include "log.h"
#include "message.h"
#include "server.h"
#include "strv.h"

#define IDLE_TIMEOUT_USEC (120 * UINT64_C(1000000))
/* Connections beyond CORRAL_CONNECTIONS_MAX kept for root: when users have filled every
 * slot, the admin can still look and act. */
#define ROOT_RESERVED_CONNECTIONS 16U

typedef struct Connection Connection;

struct Call {
        Connection *conn;
        uint64_t job_id;
        void *data;
        bool more;
        Call *next;
};

struct Connection {
        Server *server;
        int fd;
        sd_event_source *io, *idle;
        MessageReader *reader;
        MessageWriter *writer;
        Peer peer;
        Call *calls; /* deferred: answered later */
        Connection *next;
        bool dead;
};

struct Server {
        sd_event *event;
        const ServerOps *ops;
        void *userdata;
        ServerLimits limits;
        int listen_fd;
        sd_event_source *listen_source;
        Connection *conns;
        unsigned n_conns;
        char *path; /* set when we bound the socket ourselves */
        char *notice; /* added to every reply as "warning" (server_set_notice) */
};

char **peer_group_names(const Peer *peer) {
        char **names = NULL;
        struct group *g = getgrgid(peer->gid);

        if (g && strv_extend(&names, g->gr_name) < 0)
                return strv_free(names);
        for (size_t i = 0; i < peer->n_groups; i++)
                if ((g = getgrgid(peer->groups[i])) && !strv_contains(names, g->gr_name) &&
                    strv_extend(&names, g->gr_name) < 0)
                        return strv_free(names);
        return names ?: new0(char *, 1);
}

static void connection_free(Connection *c) {
        Server *s = c->server;

        for (Connection **p = &s->conns; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        s->n_conns--;
        while (c->calls) {
                Call *k = c->calls;
                c->calls = k->next;
                s->ops->call_gone(s->userdata, k);
                free(k);
        }
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->idle);
        safe_close(c->fd);
        message_reader_free(c->reader);
        message_writer_free(c->writer);
        free(c->peer.groups);
        free(c);
}

unsigned server_n_connections(Server *s) {
        return s->n_conns;
}

static void connection_update_events(Connection *c) {
        uint32_t ev = EPOLLIN;

        if (message_writer_pending(c->writer) > 0)
                ev |= EPOLLOUT;
        (void) sd_event_source_set_io_events(c->io, ev);
}

static int queue(Connection *c, json_object *reply) {
        int r;

        if (c->server->notice && json_object_is_type(reply, json_type_object))
                (void) json_object_object_add(reply, CORRAL_FIELD_WARNING,
                                              json_object_new_string(c->server->notice));
        r = message_writer_queue(c->writer, reply);
        json_object_put(reply);
        if (r < 0) {
                /* A client that reads nothing while we stream to it: drop it. */
                c->dead = true;
                return r;
        }
        return 0;
}

static void handle_message(Connection *c, const char *text, size_t len) {
        Request req = {};
        CorralError err;
        json_object *reply = NULL;
        Call *call;
        int r;

        r = request_parse(text, len, &req, &err);
        if (r < 0) {
                if (err == CORRAL_ERROR_METHOD_NOT_FOUND)
                        reply = reply_method_not_found(req.method_name ?: "");
                else if (err == CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH)
                        reply = reply_protocol_version_mismatch(0);
                else
                        reply = reply_invalid_request("malformed request: expected a JSON object with "
                                                      "\"method\" and \"parameters\"");
                request_done(&req);
                if (reply)
                        (void) queue(c, reply);
                return;
        }
        call = new0(Call, 1);
        if (!call) {
                request_done(&req);
                c->dead = true;
                return;
        }
        call->conn = c;
        call->more = req.more;
        r = c->server->ops->dispatch(c->server->userdata, call, &c->peer, req.method, req.parameters, &reply);
        if (r < 0)
                reply = reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        if (reply) {
                free(call);
                if (!req.oneway)
                        (void) queue(c, reply);
                else
                        json_object_put(reply);
        } else {
                call->next = c->calls;
                c->calls = call;
        }
        request_done(&req);
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Connection *c = userdata;

        if (c->calls) /* waiting for a job is not idling */
                return sd_event_source_set_time_relative(s, IDLE_TIMEOUT_USEC);
        log_debug("Closing idle connection of uid %u.", (unsigned) c->peer.uid);
        connection_free(c);
        return 0;
}

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Connection *c = userdata;
        char *msg;
        size_t len;
        int r;

        if (revents & EPOLLOUT) {
                r = message_writer_flush(c->writer, c->fd);
                if (r < 0 && r != -EAGAIN) {
                        connection_free(c);
                        return 0;
                }
        }
        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                r = message_reader_fill(c->reader, c->fd);
                if (r == -EAGAIN)
                        r = 1;
                for (;;) {
                        int k = message_reader_next(c->reader, &msg, &len);
                        if (k == 0)
                                break;
                        if (k == -EMSGSIZE) {
                                (void) queue(c, reply_message_too_large());
                                continue;
                        }
                        if (k < 0) {
                                c->dead = true;
                                break;
                        }
                        handle_message(c, msg, len);
                        free(msg);
                        if (c->dead)
                                break;
                }
                if (r == 0 && !c->calls) {
                        /* EOF: the client is done. Replies still queued are flushed first. */
                        if (message_writer_pending(c->writer) == 0) {
                                connection_free(c);
                                return 0;
                        }
                        (void) sd_event_source_set_io_events(c->io, EPOLLOUT);
                        return 0;
                }
                if (r == 0) {
                        connection_free(c);
                        return 0;
                }
                if (r < 0 && r != -EMSGSIZE) {
                        connection_free(c);
                        return 0;
                }
        }
        if (c->dead) {
                connection_free(c);
                return 0;
        }
        (void) sd_event_source_set_time_relative(c->idle, IDLE_TIMEOUT_USEC);
        /* Output waits for the post-iteration commit (server_flush). */
        return 0;
}

static int peer_identity(int fd, Peer *p) {
        struct ucred cred;
        socklen_t n = sizeof cred;
        gid_t groups[256];
        socklen_t gn = sizeof groups;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) < 0)
                return negative_errno();
        p->uid = cred.uid;
        p->gid = cred.gid;
        /* The peer's supplementary groups as the kernel saw them at connect time. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gn) >= 0 && gn > 0) {
                p->n_groups = gn / sizeof(gid_t);
                p->groups = new(gid_t, p->n_groups);
                if (!p->groups)
                        return -ENOMEM;
                memcpy(p->groups, groups, p->n_groups * sizeof(gid_t));
        }
        return 0;
}

static void refuse(int fd, json_object *reply) {
        char *text;
        size_t len;

        if (message_serialize(reply, CORRAL_MESSAGE_SIZE_MAX, &text, &len) >= 0) {
                (void) send(fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                free(text);
        }
        json_object_put(reply);
        safe_close(fd);
}

static int on_accept(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        Connection *c;
        unsigned same_uid = 0, per_uid;
        bool unlimited;
        int cfd, r;
        Peer peer = {};

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
                return 0;
        if (peer_identity(cfd, &peer) < 0) {
                safe_close(cfd);
                return 0;
        }
        for (Connection *k = s->conns; k; k = k->next)
                if (k->peer.uid == peer.uid)
                        same_uid++;
        per_uid = s->limits.connections_per_user;
        /* Root reaches a flooded corrald through connections kept for it (authz.c). */
        unlimited = authz_check(&(AuthzPeer) { .uid = peer.uid }, AUTHZ_EXCEED_LIMITS, NULL, NULL) == 0;
        if (unlimited ? s->n_conns >= CORRAL_CONNECTIONS_MAX + ROOT_RESERVED_CONNECTIONS
                      : s->n_conns >= CORRAL_CONNECTIONS_MAX || (per_uid && same_uid >= per_uid)) {
                json_object *p = json_object_new_object();
                bool global = s->n_conns >= CORRAL_CONNECTIONS_MAX;
                json_add_u64(p, CORRAL_FIELD_LIMIT, global ? CORRAL_CONNECTIONS_MAX : per_uid);
                json_add_string(p, CORRAL_FIELD_MESSAGE,
                                global ? "corrald has as many connections as it serves at once"
                                       : "you have as many connections open as allowed (MaxConnectionsPerUser=)");
                log_warning("Refusing a connection of uid %u: too many connections.", (unsigned) peer.uid);
                free(peer.groups);
                refuse(cfd, reply_error_new(CORRAL_ERROR_TOO_MANY_CONNECTIONS, p));
                return 0;
        }
        c = new0(Connection, 1);
        if (!c) {
                free(peer.groups);
                safe_close(cfd);
                return 0;
        }
        c->server = s;
        c->fd = cfd;
        c->peer = peer;
        c->reader = message_reader_new(CORRAL_MESSAGE_SIZE_MAX);
        /* Replies a slow client may leave unread before it is dropped (Wait streams, list
         * pages): bounded per connection, so the daemon's memory is bounded by the
         * connection caps times this. */
        c->writer = message_writer_new(MAX(s->limits.connection_output, CORRAL_MESSAGE_SIZE_MAX + 1));
        c->next = s->conns;
        s->conns = c;
        s->n_conns++;
        if (!c->reader || !c->writer ||
            (r = sd_event_add_io(s->event, &c->io, cfd, EPOLLIN, on_connection, c)) < 0 ||
            (r = sd_event_add_time_relative(s->event, &c->idle, CLOCK_MONOTONIC, IDLE_TIMEOUT_USEC, 0,
                                            on_idle, c)) < 0) {
                connection_free(c);
                return 0;
        }
        return 0;
}

void server_flush(Server *s) {
        for (Connection *c = s->conns, *next; c; c = next) {
                next = c->next;
                if (c->dead) {
                        connection_free(c);
                        continue;
                }
                if (message_writer_pending(c->writer) > 0) {
                        int r = message_writer_flush(c->writer, c->fd);
                        if (r < 0 && r != -EAGAIN) {
                                connection_free(c);
                                continue;
                        }
                }
                connection_update_events(c);
        }
}

int server_call_reply(Call *call, json_object *reply, bool continues) {
        Connection *c = call->conn;
        int r = queue(c, reply);

        if (!continues) {
                for (Call **p = &c->calls; *p; p = &(*p)->next)
                        if (*p == call) {
                                *p = call->next;
                                break;
                        }
                free(call);
        }
        return r;
}

bool server_call_more(Call *c) {
        return c->more;
}
void *server_call_get_data(Call *c) {
        return c->data;
}
void server_call_set_data(Call *c, void *data) {
        c->data = data;
}
unsigned server_call_n_deferred(Call *c) {
        unsigned n = 0;
        for (Call *k = c->conn->calls; k; k = k->next)
                n++;
        return n;
}
uint64_t server_call_job_id(Call *c) {
        return c->job_id;
}
void server_call_set_job_id(Call *c, uint64_t id) {
        c->job_id = id;
}

void server_foreach_waiting(Server *s, uint64_t job_id, void (*cb)(Call *c, void *userdata), void *userdata) {
        for (Connection *c = s->conns; c; c = c->next)
                for (Call *k = c->calls, *next; k; k = next) {
                        next = k->next; /* cb may answer and free k */
                        if (k->job_id == job_id)
                                cb(k, userdata);
                }
}

static int bind_socket(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_free_ char *dir = strdup(path);
        char *slash;

        if (!dir)
                return -ENOMEM;
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = 0;
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return negative_errno();
        /* Everyone may connect; who may do what is decided per request. */
        if (chmod(path, 0666) < 0 || listen(fd, SOMAXCONN) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

void server_set_limits(Server *s, const ServerLimits *limits) {
        s->limits = *limits;
}

int server_set_notice(Server *s, const char *notice) {
        char *n = NULL;

        if (notice && !(n = strdup(notice)))
                return -ENOMEM;
        free(s->notice);
        s->notice = n;
        return 0;
}

int server_new(sd_event *event, const char *socket_path, const ServerOps *ops, void *userdata, Server **ret) {
        Server *s = new0(Server, 1);
        int n, r;

        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(event);
        s->ops = ops;
        s->userdata = userdata;
        s->limits = (ServerLimits) { .connections_per_user = 32, .connection_output = 4U << 20 };
        s->listen_fd = -EBADF;
        n = socket_path ? 0 : sd_listen_fds(true);
        if (n > 1) {
                sd_event_unref(s->event);
                free(s);
                return -E2BIG;
        }
        if (n == 1)
                s->listen_fd = SD_LISTEN_FDS_START;
        else {
                const char *p = socket_path ?: CORRAL_SOCKET_PATH;
                s->listen_fd = bind_socket(p);
                if (s->listen_fd < 0) {
                        r = s->listen_fd;
                        sd_event_unref(s->event);
                        free(s);
                        return r;
                }
                s->path = strdup(p);
        }
        (void) fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK);
        r = sd_event_add_io(event, &s->listen_source, s->listen_fd, EPOLLIN, on_accept, s);
        if (r < 0) {
                server_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

Server *server_free(Server *s) {
        if (!s)
                return NULL;
        while (s->conns)
                connection_free(s->conns);
        sd_event_source_disable_unref(s->listen_source);
        safe_close(s->listen_fd);
        if (s->path)
                (void) unlink(s->path);
        free(s->path);
        free(s->notice);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}
