/* The Corral page in Cockpit.
 *
 * It holds no privileges and speaks no protocol of its own: everything goes through the
 * corral command, run by Cockpit's bridge as the logged-in user (cockpit.spawn), so
 * corrald's rules (daemon/authz.c) decide what the page sees and may do, and a refusal is
 * shown in corrald's own words (the command's stderr). With "Act as administrator" ticked,
 * commands run with superuser: "try", which Cockpit grants only to a session that has
 * administrative access.
 *
 * The queue is polled (corral queue --json every 2 s while the Queue tab is shown and the
 * browser tab is visible): one List call to corrald, which answers from memory without
 * touching disk, is cheaper than a stream to keep per browser, and the page's 2 s bound is
 * met. docs/COCKPIT.md says more. */
"use strict";

(function () {
    var POLL_MS = 2000;
    var PAGE_ROWS = 200;
    var WHY_MAX = 20;           /* own pending jobs explained with corral why per refresh */
    var WHY_TTL_MS = 15000;

    var me = null;
    var whoami = Promise.resolve(null);
    /* When Cockpit's channel to the bridge was ready (from the page's start), for the
     * benchmark: what any Cockpit page waits for before its first answer. */
    var transportReady = null;
    var superuser = false;
    var queueJobs = [];
    var queuePage = 0;
    var queueCursors = [0];     /* each page's --after */
    var queueNext = 0;          /* the next page's, 0: none */
    var queueOwnCount = 0, queuePageCount = 0;
    var queueTimer = null;
    var queueInFlight = false;
    var lastQueueOut = null;
    var whyCache = {};          /* id -> {at, text} */
    var logProc = null;
    var jobTimer = null;
    var currentJob = null;
    var firstViewReported = false;
    var pageStart = (window.performance && performance.now) ? performance.now() : Date.now();

    function $(id) { return document.getElementById(id); }

    function el(tag, attrs, children) {
        var e = document.createElement(tag);
        if (attrs)
            Object.keys(attrs).forEach(function (k) {
                if (k === "text")
                    e.textContent = attrs[k];
                else if (k === "class")
                    e.className = attrs[k];
                else if (k.slice(0, 2) === "on")
                    e.addEventListener(k.slice(2), attrs[k]);
                else
                    e.setAttribute(k, attrs[k]);
            });
        (children || []).forEach(function (c) {
            e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
        });
        return e;
    }

    /* corral ARGS..., as the user (or as root where Cockpit grants it). Resolves with stdout;
     * rejects with corrald's message as the command printed it. */
    function corral(args, opts) {
        var o = { err: "message" };
        if (superuser)
            o.superuser = "try";
        if (opts)
            Object.keys(opts).forEach(function (k) { o[k] = opts[k]; });
        return cockpit.spawn(["corral"].concat(args), o);
    }

    /* ---- corrald's socket, for the queue's listings ----
     *
     * One stream channel to corrald's socket, opened by Cockpit's bridge as the logged-in
     * user (as root with "Act as administrator"), so corrald sees who asks exactly as it
     * sees the CLI. Used for List only, which the queue runs every 2 s: a corral process
     * per listing cost most of the first view in an emulated guest (spawned, linked,
     * connected each time); actions and their refusals stay with the CLI, whose words
     * the page shows. The protocol: NUL-terminated JSON, replies in request order. */
    var SOCKET = "/run/corral/io.corral.Manager";
    var conn = null;

    function Conn(admin) {
        var self = this;
        self.admin = admin;
        self.pending = [];
        self.parts = [];
        var o = { payload: "stream", unix: SOCKET, binary: true };
        if (admin)
            o.superuser = "try";
        self.ch = cockpit.channel(o);
        self.ch.addEventListener("message", function (ev, data) { self.feed(data) });
        self.ch.addEventListener("close", function (ev, opts) {
            if (conn === self)
                conn = null;
            var p = self.pending;
            self.pending = [];
            p.forEach(function (w) {
                w.reject(new Error("corrald's socket closed" + (opts && opts.problem ? ": " + opts.problem : "")));
            });
        });
    }

    Conn.prototype.feed = function (data) {
        var bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
        var start = 0;
        for (var i = 0; i < bytes.length; i++) {
            if (bytes[i] !== 0)
                continue;
            this.parts.push(bytes.subarray(start, i));
            start = i + 1;
            var len = this.parts.reduce(function (n, p) { return n + p.length }, 0);
            var all = new Uint8Array(len), at = 0;
            this.parts.forEach(function (p) { all.set(p, at); at += p.length });
            this.parts = [];
            var w = this.pending.shift();
            if (!w)
                continue;
            try {
                var msg = JSON.parse(new TextDecoder().decode(all));
                if (msg.error)
                    w.reject(new Error(msg.error.replace(/^io\.corral\.Error\./, "") +
                        (msg.parameters && msg.parameters.message ? ": " + msg.parameters.message : "") +
                        (msg.parameters && msg.parameters.parameter ? " (" + msg.parameters.parameter + ")" : "")));
                else
                    w.resolve(msg.parameters || {});
            } catch (ex) {
                w.reject(ex);
            }
        }
        if (start < bytes.length)
            this.parts.push(bytes.slice(start));
    };

    Conn.prototype.call = function (method, params) {
        var self = this;
        var text = new TextEncoder().encode(JSON.stringify({ method: "io.corral.Manager." + method, parameters: params }));
        var out = new Uint8Array(text.length + 1);
        out.set(text);
        return new Promise(function (resolve, reject) {
            self.pending.push({ resolve: resolve, reject: reject });
            self.ch.send(out);
        });
    };

    function corraldCall(method, params) {
        if (conn && conn.admin !== superuser) {
            conn.ch.close();
            conn = null;
        }
        if (!conn)
            conn = new Conn(superuser);
        return conn.call(method, params);
    }

    function corralJson(args) {
        return corral(args.concat(["--json"])).then(function (out) { return JSON.parse(out); });
    }

    function errText(ex) {
        var m = (ex && (ex.message || ex.problem)) || String(ex);
        return m.replace(/\s+$/, "");
    }

    function showAlert(text, kind) {
        var a = $("corral-alert");
        a.textContent = text;
        a.className = "corral-alert" + (kind ? " corral-alert-" + kind : "");
        a.hidden = !text;
    }

    /* ---- formatting ---- */

    function fmtTime(sec) {
        if (!sec)
            return "";
        var d = new Date(sec * 1000);
        var now = Date.now();
        var s = d.toLocaleString();
        if (Math.abs(d.getTime() - now) < 24 * 3600 * 1000)
            s = d.toLocaleTimeString();
        return s;
    }

    function fmtDuration(sec) {
        if (sec === "infinity" || sec === undefined || sec === null)
            return "no limit";
        sec = Math.round(sec);
        var d = Math.floor(sec / 86400), h = Math.floor(sec % 86400 / 3600),
            m = Math.floor(sec % 3600 / 60), s = sec % 60;
        var hms = [h, m, s].map(function (x) { return (x < 10 ? "0" : "") + x; }).join(":");
        return d ? d + "-" + hms : hms;
    }

    function fmtBytes(b) {
        if (!b)
            return "0";
        var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
        while (b >= 1024 && i < u.length - 1) { b /= 1024; i++ }
        return (i ? b.toFixed(1) : b) + " " + u[i];
    }

    /* Slurm-style reason codes in words; corral why gives the full story (the Job tab). */
    var REASONS = {
        Priority: "other jobs come first",
        Resources: "waiting for free CPUs, memory or GPUs",
        Dependency: "waiting for the jobs it depends on",
        BeginTime: "not before its begin time",
        JobHeldUser: "held by its owner",
        JobHeldAdmin: "held by an administrator",
        JobArrayTaskLimit: "its array runs as many tasks as it may",
        TimeLimit: "ran out of time",
    };

    function reasonWords(j) {
        var w = whyCache[j.id];
        if (w && w.text)
            return w.text;
        if (!j.reason)
            return "";
        return REASONS[j.reason] ? j.reason + ": " + REASONS[j.reason] : j.reason;
    }

    function isPending(j) { return j.state === "PENDING" || j.state === "HELD" }
    function isEnded(j) {
        return ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"]
            .indexOf(j.state) >= 0;
    }

    /* ---- tabs ---- */

    var TABS = ["queue", "job", "submit", "machine", "usage"];

    function showTab(name, focus) {
        TABS.forEach(function (t) {
            var tab = $("tab-" + t), on = t === name;
            tab.setAttribute("aria-selected", on ? "true" : "false");
            tab.tabIndex = on ? 0 : -1;
            $("panel-" + t).hidden = !on;
            if (on && focus)
                tab.focus();
        });
        if (name !== "job")
            stopJob();
        if (name === "queue")
            startQueue();
        else
            stopQueue();
        if (name === "machine")
            loadMachine();
        if (name === "usage")
            loadUsage();
        if (name === "submit")
            updateSubmitLine();
    }

    function route() {
        var p = cockpit.location.path;
        var tab = TABS.indexOf(p[0]) >= 0 ? p[0] : "queue";
        showTab(tab, false);
        if (tab === "job" && p[1]) {
            $("job-id").value = p[1];
            loadJob(p[1]);
        }
    }

    function go(path) {
        cockpit.location.go(path);
    }

    function setupTabs() {
        var list = document.querySelector("[role=tablist]");
        list.addEventListener("click", function (ev) {
            var t = ev.target.closest("[role=tab]");
            if (t)
                go([t.dataset.tab]);
        });
        /* Arrow keys move between tabs, as WAI-ARIA's tabs pattern has it. */
        list.addEventListener("keydown", function (ev) {
            var i = TABS.indexOf(document.activeElement.dataset.tab);
            if (i < 0)
                return;
            var n = null;
            if (ev.key === "ArrowRight") n = TABS[(i + 1) % TABS.length];
            else if (ev.key === "ArrowLeft") n = TABS[(i + TABS.length - 1) % TABS.length];
            else if (ev.key === "Home") n = TABS[0];
            else if (ev.key === "End") n = TABS[TABS.length - 1];
            if (n) {
                ev.preventDefault();
                go([n]);
                $("tab-" + n).focus();
            }
        });
    }

    /* ---- queue ---- */

    /* The filters, but the user's, as List's parameters. */
    function queueFilter() {
        var f = {};
        var p = $("f-project").value.trim(), q = $("f-queue").value.trim(), s = $("f-state").value;
        if (p) f.project = p;
        if (q) f.queue = q;
        if (s) f.states = s.split(",");
        return f;
    }

    function listParams(extra) {
        var f = queueFilter();
        Object.keys(extra).forEach(function (k) { f[k] = extra[k] });
        return f;
    }

    /* Two listings, each bounded whatever the queue's length: the user's own jobs (corrald
     * answers a user's from its per-user index), and one page of everyone's in the order
     * of their ids ("limit", "after_id": the page starts where the one before ended, as
     * corral queue --limit --after). With 10,000 jobs queued, the page never fetches,
     * parses or renders all of them. The page's listing does not wait for the user's
     * name; their own jobs follow on the same connection. */
    function refreshQueue() {
        if (queueInFlight)
            return;
        queueInFlight = true;
        var t0 = performance.now();
        var user = $("f-user").value.trim();
        var pageCall = function () {
            var mine = me ? me.name : null;
            if (user && user === mine)
                return Promise.resolve(null);
            var x = { limit: PAGE_ROWS };
            if (queueCursors[queuePage])
                x.after_id = queueCursors[queuePage];
            if (user)
                x.user = user;
            return corraldCall("List", listParams(x));
        };
        var ownCall = function () {
            var mine = me ? me.name : null;
            if (!mine || (user && user !== mine))
                return Promise.resolve(null);
            return corraldCall("List", listParams({ user: mine }));
        };
        var marks = {};
        var mark = function (name) {
            return function (v) { marks[name] = Math.round(performance.now() - t0); return v };
        };
        Promise.all([whoami.then(mark("who")), pageCall().then(mark("page"))]).then(function (r) {
            return Promise.all([ownCall().then(mark("own")), r[1]]);
        }).then(function (outs) {
            queueInFlight = false;
            var mine = me ? me.name : null;
            var key = JSON.stringify(outs);
            /* Unchanged: the rows stay as they are, so that a button is not replaced
             * under the pointer between a press and its release. */
            if (key === lastQueueOut) {
                queueStatus();
                return;
            }
            lastQueueOut = key;
            var ownReply = outs[0] || { jobs: [] };
            var pageReply = outs[1] || { jobs: [] };
            /* Running before waiting, then by id; one's own first. */
            var rank = function (j) {
                return j.state === "RUNNING" ? 0 : isPending(j) ? 1 : 2;
            };
            var order = function (a, b) { return rank(a) - rank(b) || a.id - b.id };
            var ownJobs = (ownReply.jobs || []).sort(order);
            var rest = (pageReply.jobs || []).filter(function (j) { return !outs[0] || j.user !== mine }).sort(order);
            queueOwnCount = ownJobs.length;
            queuePageCount = (pageReply.jobs || []).length;
            queueNext = pageReply.next_after_id || 0;
            queueJobs = ownJobs.concat(rest);
            renderQueue();
            queueStatus();
            if (!firstViewReported) {
                firstViewReported = true;
                /* Read by the browser test's benchmark. */
                document.body.dataset.firstView = String(Math.round(performance.now() - pageStart));
                document.body.dataset.firstFetch = String(Math.round(performance.now() - t0));
                /* And where it went: Cockpit's user, the page of everyone's, one's own. */
                marks.transport_since_load = transportReady === null ? null : Math.round(transportReady - pageStart);
                document.body.dataset.firstMarks = JSON.stringify(marks);
            }
            explainOwnPending();
        }, function (ex) {
            queueInFlight = false;
            $("queue-status").textContent = "";
            showAlert(errText(ex), "danger");
        });
    }

    function queueStatus() {
        var own = queueOwnCount ? queueOwnCount + " of yours; " : "";
        $("queue-status").textContent = own + "page " + (queuePage + 1) + ": " + queuePageCount + " job" +
            (queuePageCount === 1 ? "" : "s") + (queueNext ? ", more on the next page" : "") +
            "; updated " + new Date().toLocaleTimeString();
    }

    function actionButton(label, verb, j) {
        return el("button", {
            type: "button", class: "corral-small", text: label,
            "aria-label": label + " job " + j.id,
            "data-action": verb, "data-job": String(j.id),
        });
    }

    function rowActions(j) {
        var b = [];
        if (!isEnded(j))
            b.push(actionButton("Cancel", "cancel", j));
        if (j.state === "PENDING")
            b.push(actionButton("Hold", "hold", j));
        if (j.state === "HELD")
            b.push(actionButton("Release", "release", j));
        if (j.state === "RUNNING" || isEnded(j))
            b.push(actionButton("Requeue", "requeue", j));
        return b;
    }

    function renderQueue() {
        var body = $("queue-body");
        var frag = document.createDocumentFragment();
        var mine = me ? me.name : null;
        queueJobs.forEach(function (j) {
            var why = isPending(j) ? reasonWords(j) : j.start_time ? "started " + fmtTime(j.start_time) : "";
            if (isPending(j) && j.est_start)
                why += (why ? "; " : "") + "expected to start " + fmtTime(j.est_start);
            var tr = el("tr", { "data-job": String(j.id), "data-state": j.state, class: j.user === mine ? "corral-own" : "" }, [
                el("td", {}, [el("a", { href: "#/job/" + j.id, text: String(j.id), "aria-label": "Job " + j.id })]),
                el("td", { text: j.name || "" }),
                el("td", { text: j.user || String(j.uid) }),
                el("td", { text: j.project || "" }),
                el("td", { text: j.queue || "" }),
                el("td", {}, [el("span", { class: "corral-state corral-state-" + j.state, text: j.state })]),
                el("td", { class: "corral-why", text: why }),
                el("td", { text: String(j.cpus) }),
                el("td", { class: "corral-row-actions" }, rowActions(j)),
            ]);
            frag.appendChild(tr);
        });
        body.replaceChildren(frag);
        $("page-info").textContent = "Page " + (queuePage + 1);
        $("page-prev").disabled = queuePage === 0;
        $("page-next").disabled = !queueNext;
    }

    /* The user's own waiting jobs on this page get corral why's first sentence. */
    function explainOwnPending() {
        if (!me)
            return;
        var now = Date.now();
        var want = queueJobs.filter(function (j) {
            var w = whyCache[j.id];
            return j.user === me.name && isPending(j) && (!w || now - w.at > WHY_TTL_MS);
        }).slice(0, WHY_MAX);
        want.forEach(function (j) {
            whyCache[j.id] = { at: now, text: whyCache[j.id] ? whyCache[j.id].text : null };
            corralJson(["why", String(j.id)]).then(function (w) {
                var s = (w.why || []).join("; ");
                whyCache[j.id] = { at: Date.now(), text: s || null };
                var cell = document.querySelector("#queue-body tr[data-job='" + j.id + "'] .corral-why");
                if (cell && s)
                    cell.textContent = s + (j.est_start ? "; expected to start " + fmtTime(j.est_start) : "");
            }, function () { /* the reason code stays */ });
        });
    }

    function startQueue() {
        if (queueTimer)
            return;
        refreshQueue();
        queueTimer = window.setInterval(function () {
            if (!document.hidden)
                refreshQueue();
        }, POLL_MS);
    }

    function stopQueue() {
        if (queueTimer)
            window.clearInterval(queueTimer);
        queueTimer = null;
    }

    function jobAction(verb, id) {
        showAlert("");
        return corral([verb, String(id)]).then(function () {
            showAlert(verb[0].toUpperCase() + verb.slice(1) + ": job " + id + " done.", "success");
            refreshQueue();
            if (currentJob === String(id))
                loadJob(currentJob);
        }, function (ex) {
            /* corrald's own words, as the command printed them. */
            showAlert(errText(ex), "danger");
        });
    }

    function setupQueue() {
        $("queue-filters").addEventListener("submit", function (ev) { ev.preventDefault(); refreshQueue() });
        ["f-user", "f-project", "f-queue", "f-state"].forEach(function (id) {
            $(id).addEventListener("change", function () {
                queuePage = 0;
                queueCursors = [0];
                lastQueueOut = null;
                refreshQueue();
            });
        });
        /* Pages by where each starts (the job id before it), as corrald pages. */
        $("page-prev").addEventListener("click", function () {
            if (queuePage > 0)
                queuePage--;
            lastQueueOut = null;
            refreshQueue();
        });
        $("page-next").addEventListener("click", function () {
            if (!queueNext)
                return;
            queueCursors[queuePage + 1] = queueNext;
            queuePage++;
            lastQueueOut = null;
            refreshQueue();
        });
        var onAction = function (ev) {
            var b = ev.target.closest("button[data-action]");
            if (b)
                jobAction(b.dataset.action, b.dataset.job);
        };
        $("queue-body").addEventListener("click", onAction);
        $("job-actions").addEventListener("click", onAction);
    }

    /* ---- one job ---- */

    function dl(target, pairs) {
        var frag = document.createDocumentFragment();
        pairs.forEach(function (p) {
            if (p[1] === undefined || p[1] === null || p[1] === "")
                return;
            frag.appendChild(el("dt", { text: p[0] }));
            frag.appendChild(el("dd", { text: String(p[1]) }));
        });
        target.replaceChildren(frag);
    }

    function stopJob() {
        if (logProc) {
            logProc.close();
            logProc = null;
        }
        if (jobTimer)
            window.clearInterval(jobTimer);
        jobTimer = null;
    }

    function followLog(id) {
        var pre = $("job-log");
        pre.textContent = "";
        $("job-log-state").textContent = "(following)";
        /* corral logs -f: the job's files read with the user's own rights, as in a shell. */
        logProc = corral(["logs", "-f", String(id)], { err: "out" });
        logProc.stream(function (data) {
            var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
            pre.appendChild(document.createTextNode(data));
            /* Bounded: the page keeps the last 256 KiB of output. */
            if (pre.textContent.length > 262144)
                pre.textContent = pre.textContent.slice(-262144);
            if (atEnd)
                pre.scrollTop = pre.scrollHeight;
        });
        logProc.then(function () {
            $("job-log-state").textContent = "";
        }, function (ex) {
            if (ex && ex.problem === "cancelled")
                return;
            $("job-log-state").textContent = "";
            pre.appendChild(document.createTextNode(errText(ex) + "\n"));
        });
    }

    function renderJob(j, why) {
        $("job-title").textContent = "Job " + j.id + (j.name ? " (" + j.name + ")" : "") + ": " + j.state +
            (j.reason ? ", " + j.reason : "");
        $("job-actions").replaceChildren.apply($("job-actions"), rowActions(j));
        dl($("job-request"), [
            ["User", j.user], ["Project", j.project], ["Queue", j.queue],
            ["Command", j.argv ? j.argv.join(" ") : j.has_script ? "(a script)" : ""],
            ["CPUs", j.cpus], ["Memory", j.memory ? fmtBytes(j.memory) : "no limit"],
            ["Time limit", fmtDuration(j.walltime_sec)],
            ["Array task", j.array_job_id ? j.array_job_id + "_" + j.array_task_id : ""],
            ["Submitted", fmtTime(j.submit_time)], ["Started", fmtTime(j.start_time)],
            ["Ended", fmtTime(j.end_time)],
            ["Exit code", j.exit_code], ["Signal", j.exit_signal],
            ["CPUs allocated", j.cpus_allocated], ["Working directory", j.workdir],
            ["Output", j.stdout_path],
        ]);
        var u = j.usage || {}, c = j.charge || {};
        var gpu = (j.gpu_usage || []).map(function (g) {
            return "GPU " + g.gpu + ": held " + fmtDuration(g.held_sec) +
                (g.util_mean !== undefined ? ", " + Math.round(g.util_mean) + "% mean" : "");
        }).join("; ");
        dl($("job-usage"), [
            ["CPU time", u.cpu_usec !== undefined ? fmtDuration(u.cpu_usec / 1e6) : ""],
            ["Memory peak", u.memory_peak !== undefined ? fmtBytes(u.memory_peak) : ""],
            ["Core-hours", c.core_hours !== undefined ? Number(c.core_hours).toFixed(3) : ""],
            ["Service units", c.service_units !== undefined ? Number(c.service_units).toFixed(3) : ""],
            ["Read", u.io_read_bytes ? fmtBytes(u.io_read_bytes) : ""],
            ["Written", u.io_write_bytes ? fmtBytes(u.io_write_bytes) : ""],
            ["GPUs", gpu],
        ]);
        var ul = $("job-why");
        var items = [];
        if (why) {
            (why.why || []).forEach(function (s) { items.push(el("li", { text: s })) });
            if (why.priority !== undefined)
                items.push(el("li", {
                    text: "Priority " + why.priority + (why.terms && why.terms.length ? " = " +
                        why.terms.map(function (t) { return t.name + " " + t.value }).join(" + ") : "")
                }));
            if (why.position !== undefined)
                items.push(el("li", { text: "Place " + why.position + (why.eligible ? " of " + why.eligible : "") }));
            if (why.est_start)
                items.push(el("li", { text: "Expected to start " + fmtTime(why.est_start) }));
        }
        ul.replaceChildren.apply(ul, items);
        /* Its state changes, as corral show prints them (corrald gives them to its owner
         * and administrators). */
        var BY = { owner: " by its owner", admin: " by an administrator", scheduler: " by the scheduler (preemption)" };
        var WORDS = { submit: "submitted", hold: "held", release: "released", start: "started", suspend: "suspended",
            resume: "resumed", end: "ended", cancel: "cancelled", requeue: "requeued", node_fail: "lost",
            block: "blocked", unblock: "unblocked" };
        var hist = (j.history || []).map(function (h) {
            return el("li", {}, [
                el("time", { datetime: new Date(h.time * 1000).toISOString(), text: fmtTime(h.time) }), " ",
                el("span", { class: "corral-state corral-state-" + h.state, text: h.state }), " ",
                (WORDS[h.event] || h.event) + (BY[h.by] || "") + (h.reason ? " (" + h.reason + ")" : ""),
            ]);
        });
        $("job-history").replaceChildren.apply($("job-history"), hist);
        var unit = "corral-job-" + j.id + ".scope";
        var a = $("job-unit");
        a.textContent = unit + " in Services";
        a.onclick = function (ev) {
            ev.preventDefault();
            cockpit.jump("/system/services#/" + unit);
        };
        a.href = "../system/services.html#/" + unit;
    }

    function loadJob(id) {
        id = String(id).trim();
        if (!/^[0-9]+(_[0-9]+)?$/.test(id)) {
            showAlert("A job id is a number, e.g. 12.", "danger");
            return;
        }
        var again = currentJob === id && logProc;
        currentJob = id;
        var fetch = function () {
            return Promise.all([
                corralJson(["show", id]),
                corralJson(["why", id]).catch(function () { return null }),
            ]).then(function (r) {
                var j = r[0].job || (r[0].jobs && r[0].jobs[0]);
                if (!j)
                    throw new Error("corral show printed no job");
                $("job-view").hidden = false;
                renderJob(j, r[1]);
                if (isEnded(j) && jobTimer) {
                    window.clearInterval(jobTimer);
                    jobTimer = null;
                }
                return j;
            });
        };
        showAlert("");
        fetch().then(function (j) {
            if (!again) {
                stopJob();
                if (j.state !== "PENDING" && j.state !== "HELD")
                    followLog(id);
                else
                    $("job-log").textContent = "";
            }
            if (!jobTimer && !isEnded(j))
                jobTimer = window.setInterval(function () {
                    fetch().then(function (j2) {
                        if (!logProc && !isPending(j2))
                            followLog(id);
                    }, function () {});
                }, POLL_MS);
        }, function (ex) {
            $("job-view").hidden = true;
            showAlert(errText(ex), "danger");
        });
    }

    function setupJob() {
        $("job-form").addEventListener("submit", function (ev) {
            ev.preventDefault();
            go(["job", $("job-id").value.trim()]);
        });
    }

    /* ---- submit ---- */

    function shellQuote(s) {
        return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
    }

    function submitArgs() {
        var a = ["submit"];
        var v = function (id) { return $(id).value.trim() };
        if (v("s-name")) a.push("--job-name", v("s-name"));
        if (v("s-cpus") && v("s-cpus") !== "1") a.push("--cpus", v("s-cpus"));
        if (v("s-mem")) a.push("--mem", v("s-mem"));
        if (v("s-time")) a.push("--time", v("s-time"));
        /* A file by default: output left to the journal is not the user's to follow
         * (corral logs -f runs journalctl as them). */
        if (v("s-output")) a.push("--output", v("s-output"));
        if (v("s-gpus")) a.push("--gpus", v("s-gpus"));
        if (v("s-queue")) a.push("--queue", v("s-queue"));
        if (v("s-project")) a.push("--project", v("s-project"));
        if (v("s-array")) a.push("--array", v("s-array"));
        /* The command line as one shell command, as --wrap has it. */
        a.push("--", "/bin/sh", "-c", v("s-command"));
        return a;
    }

    function updateSubmitLine() {
        $("s-line").textContent = "corral " + submitArgs().map(shellQuote).join(" ");
    }

    function runSubmit(testOnly) {
        if (!$("s-command").value.trim()) {
            $("s-result").textContent = "A command is needed.";
            $("s-command").focus();
            return Promise.resolve(false);
        }
        var args = submitArgs();
        var i = args.indexOf("--");
        if (testOnly)
            args.splice(i, 0, "--test-only");
        else
            args.splice(i, 0, "--parsable");
        $("s-result").className = "corral-wide corral-result";
        $("s-result").textContent = testOnly ? "Checking…" : "Submitting…";
        var dir = me && me.home ? me.home : undefined;
        var run;
        if (testOnly) {
            /* --test-only prints corrald's answer, a refusal too, on stdout and exits non-zero
             * when refused: the output is wanted either way. */
            var o = { err: "out", directory: dir };
            if (superuser)
                o.superuser = "try";
            /* A native promise: a throw inside cockpit.spawn's own then() is not turned into
             * a rejection by Cockpit 287 (its shell shows "Ooops!"). */
            run = new Promise(function (resolve, reject) {
                cockpit.spawn(["/bin/sh", "-c", 'corral "$@"; echo "corral-exit=$?"', "sh"].concat(args), o)
                    .then(function (out) {
                        var m = /corral-exit=(\d+)\s*$/.exec(out);
                        out = out.replace(/corral-exit=\d+\s*$/, "");
                        if (m && m[1] === "0")
                            resolve(out);
                        else
                            reject(new Error(out));
                    }, reject);
            });
        } else {
            run = corral(args, { directory: dir });
        }
        return run.then(function (out) {
            var id = out.trim().split(/[;\s]/)[0];
            $("s-result").textContent = testOnly ? out : "Submitted job " + id + ".";
            $("s-result").classList.add("corral-ok");
            if (!testOnly) {
                var a = el("a", { href: "#/job/" + id, text: " Follow job " + id });
                $("s-result").appendChild(a);
            }
            return true;
        }, function (ex) {
            /* corrald's refusal, word for word. */
            $("s-result").textContent = errText(ex);
            $("s-result").classList.add("corral-bad");
            return false;
        });
    }

    function setupSubmit() {
        $("submit-form").addEventListener("input", updateSubmitLine);
        $("s-check").addEventListener("click", function () { runSubmit(true) });
        $("submit-form").addEventListener("submit", function (ev) {
            ev.preventDefault();
            /* Checked first: a job that would be refused is never sent. */
            runSubmit(true).then(function (ok) {
                if (ok)
                    return runSubmit(false);
            });
        });
    }

    /* ---- machine ---- */

    function parseCpuList(s) {
        var out = [];
        (s || "").split(",").forEach(function (r) {
            if (!r) return;
            var ab = r.split("-").map(Number);
            for (var c = ab[0]; c <= (ab.length > 1 ? ab[1] : ab[0]); c++)
                out.push(c);
        });
        return out;
    }

    function loadMachine() {
        Promise.all([corralJson(["info"]), corralJson(["queue", "--state", "RUNNING"]).catch(function () { return { jobs: [] } })])
            .then(function (r) {
                var info = r[0], running = r[1].jobs || [];
                dl($("m-summary"), [
                    ["Host", info.hostname], ["Corral", info.version],
                    ["CPUs", info.cpus], ["NUMA nodes", info.numa_nodes],
                    ["Memory", fmtBytes(info.memory)], ["Policy", info.policy],
                    ["Jobs", info.jobs_running !== undefined ? info.jobs_running + " running, " +
                        info.jobs_waiting + " waiting, " + info.jobs_held + " held" : ""],
                    ["Last scheduling pass", info.last_pass_usec !== undefined ?
                        (info.last_pass_usec / 1000).toFixed(1) + " ms, " + info.last_pass_jobs + " jobs" : ""],
                    ["Configuration", info.config_error ? "BROKEN on disk: " + info.config_error +
                        (info.config_in_force ? " (running on " + info.config_in_force + ")" : "") : "loaded"],
                ]);
                var owner = {};
                running.forEach(function (j) {
                    parseCpuList(j.cpus_allocated).forEach(function (c) { owner[c] = j });
                });
                var nodes = Math.max(1, info.numa_nodes || 1), per = Math.ceil((info.cpus || 0) / nodes);
                var cpus = $("m-cpus");
                var frag = document.createDocumentFragment();
                for (var n = 0; n < nodes; n++) {
                    var g = el("div", { class: "corral-node", role: "listitem" }, [el("h3", { text: "NUMA node " + n })]);
                    for (var c = n * per; c < Math.min(info.cpus, (n + 1) * per); c++) {
                        var j = owner[c];
                        g.appendChild(el("span", {
                            class: "corral-cpu" + (j ? " corral-cpu-busy" : ""),
                            title: "CPU " + c + (j ? ": job " + j.id + " (" + (j.user || j.uid) + ")" : ": free"),
                            text: c + (j ? " · " + j.id : ""),
                        }));
                    }
                    frag.appendChild(g);
                }
                cpus.replaceChildren(frag);
                /* NVML's figures by the card's UUID (a MIG device has none of its own). */
                var telem = {};
                (info.gpu_telemetry && info.gpu_telemetry.gpus || []).forEach(function (t) { telem[t.uuid] = t });
                var gpus = (info.devices || []).map(function (d) {
                    var holder = d.job_id ? "job " + d.job_id + " (" + (d.user || "?") + ")" : d.offline ? "gone" :
                        d.mig_mode ? "MIG mode: its MIG devices are given out" : "free";
                    if (d.shard_holders && d.shard_holders.length)
                        holder = d.shard_holders.map(function (h) {
                            return "job " + h.job_id + " (" + h.user + ", " + h.shards + " shards)";
                        }).join(", ");
                    else if (d.shards && !d.job_id && !d.offline)
                        holder = "free, " + d.shards + " shards";
                    var model = d.mig_profile ? (d.model ? d.model + " " : "") + "MIG " + d.mig_profile +
                        " (" + (d.mig_of || "?") + " GI " + d.mig_gi + " CI " + d.mig_ci + ")" : d.model || "";
                    var t = d.uuid && telem[d.uuid];
                    var use = t && t.utilization !== undefined ? t.utilization + "%" : "";
                    if (t && t.memory_used !== undefined)
                        use += (use ? ", " : "") + fmtBytes(t.memory_used) +
                            (t.memory_total ? " of " + fmtBytes(t.memory_total) : "");
                    return el("tr", {}, [
                        el("td", { text: d.index + " " + d.name }), el("td", { text: model }),
                        el("td", { text: d.numa_node !== undefined ? String(d.numa_node) : "-" }),
                        el("td", { text: holder }),
                        el("td", { text: use }),
                    ]);
                });
                if (!gpus.length)
                    gpus.push(el("tr", {}, [el("td", { colspan: "5", text: "No GPUs." })]));
                $("m-gpus").replaceChildren.apply($("m-gpus"), gpus);
                var qs = (info.queues || []).map(function (q) {
                    return el("tr", {}, [
                        el("td", { text: q.name }), el("td", { text: String(q.priority) }),
                        el("td", { text: q.max_walltime ? fmtDuration(q.max_walltime) : "no limit" }),
                        el("td", { text: q.default ? "yes" : "" }),
                    ]);
                });
                $("m-queues").replaceChildren.apply($("m-queues"), qs);
            }, function (ex) { showAlert(errText(ex), "danger") });
    }

    /* ---- usage ---- */

    var SVGNS = "http://www.w3.org/2000/svg";

    function svg(tag, attrs, text) {
        var e = document.createElementNS(SVGNS, tag);
        Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]) });
        if (text !== undefined)
            e.textContent = text;
        return e;
    }

    /* A horizontal bar chart of one figure by key: drawn here, no chart library. */
    function barChart(title, rows, field) {
        var max = rows.reduce(function (m, r) { return Math.max(m, Number(r[field]) || 0) }, 0);
        var bar = 22, labelW = 140, width = 560, h = rows.length * bar + 8;
        var s = svg("svg", { viewBox: "0 0 " + width + " " + h, role: "img", "aria-label": title, class: "corral-chart" });
        s.appendChild(svg("title", {}, title));
        rows.forEach(function (r, i) {
            var v = Number(r[field]) || 0, w = max > 0 ? (width - labelW - 90) * v / max : 0, y = 4 + i * bar;
            s.appendChild(svg("text", { x: labelW - 6, y: y + 15, "text-anchor": "end", class: "corral-chart-label" }, r.key));
            s.appendChild(svg("rect", { x: labelW, y: y + 3, width: Math.max(w, v > 0 ? 1 : 0), height: bar - 6, class: "corral-chart-bar" }));
            s.appendChild(svg("text", { x: labelW + w + 6, y: y + 15, class: "corral-chart-value" }, v.toFixed(2)));
        });
        return el("figure", { class: "corral-figure" }, [el("figcaption", { text: title }), s]);
    }

    function usageArgs() {
        return ["usage", "--by", $("u-by").value, "--since", $("u-since").value.trim() || "30d",
            "--until", $("u-until").value.trim() || "today"];
    }

    function loadUsage() {
        corralJson(usageArgs()).then(function (u) {
            var rows = u.rows || [];
            var box = $("u-charts");
            if (!rows.length) {
                box.replaceChildren(el("p", { text: "No jobs ended in this period." }));
            } else {
                var charts = [barChart("Core-hours by " + u.by, rows, "core_hours"),
                    barChart("Service units by " + u.by, rows, "service_units")];
                if (rows.some(function (r) { return r.gpu_hours }))
                    charts.push(barChart("GPU-hours by " + u.by, rows, "gpu_hours"));
                box.replaceChildren.apply(box, charts);
            }
        }, function (ex) { showAlert(errText(ex), "danger") });
        corralJson(["share"]).then(function (s) {
            var trs = (s.projects || []).map(function (p) {
                return el("tr", {}, [
                    el("td", { text: p.name }), el("td", { text: String(p.share) }),
                    el("td", { text: Number(p.usage || 0).toFixed(2) }),
                    el("td", { text: Number(p.fairshare || 0).toFixed(3) }),
                    el("td", { text: p.grant !== undefined ? Number(p.grant_left || 0).toFixed(1) + " of " + p.grant : "" }),
                ]);
            });
            $("u-share").replaceChildren.apply($("u-share"), trs);
        }, function () {});
    }

    function downloadCsv() {
        corral(usageArgs().concat(["--csv"])).then(function (csv) {
            var a = el("a", {
                href: URL.createObjectURL(new Blob([csv], { type: "text/csv" })),
                download: "corral-usage-by-" + $("u-by").value + ".csv",
            });
            document.body.appendChild(a);
            a.click();
            a.remove();
        }, function (ex) { showAlert(errText(ex), "danger") });
    }

    function setupUsage() {
        $("usage-form").addEventListener("submit", function (ev) { ev.preventDefault(); loadUsage() });
        $("u-csv").addEventListener("click", downloadCsv);
    }

    /* ---- start ---- */

    function setupSuperuser() {
        /* Offered only where Cockpit gives this session administrative access. */
        var perm = cockpit.permission({ admin: true });
        var update = function () {
            $("superuser-box").hidden = !perm.allowed;
            if (!perm.allowed) {
                superuser = false;
                $("superuser").checked = false;
            }
        };
        perm.addEventListener("changed", update);
        update();
        $("superuser").addEventListener("change", function () {
            superuser = $("superuser").checked;
            refreshQueue();
        });
    }

    document.addEventListener("DOMContentLoaded", function () {
        setupTabs();
        setupQueue();
        setupJob();
        setupSubmit();
        setupUsage();
        try {
            setupSuperuser();
        } catch (ex) {
            console.warn("no cockpit.permission: administrator mode not offered", ex);
        }
        document.addEventListener("visibilitychange", function () {
            if (!document.hidden && queueTimer)
                refreshQueue();
        });
        var started = false;
        var start = function () {
            if (started)
                return;
            started = true;
            cockpit.addEventListener("locationchanged", route);
            route();
        };
        try {
            cockpit.transport.wait(function () { transportReady = performance.now() });
        } catch (ex) { /* an older cockpit.js */ }
        /* The queue's first listing is sent at once; the user's own jobs, which need
         * their name, follow when Cockpit has said who they are. */
        whoami = cockpit.user().then(function (u) {
            me = u;
            $("corral-whoami").textContent = "as " + u.name;
            return u;
        }, function () { return null });
        start();
    });
}());
