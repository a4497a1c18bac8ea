#!/usr/bin/python3
"""The Cockpit tier's browser, on the host: a headless Chromium (Debian's chromium,
chromium-driver, python3-selenium) drives the Corral page of the guest's Cockpit through
tests/vm/run's port forward, while tests/integration/slow-cockpit.sh sets the scene in the
guest and checks what the clicks did there.

The two hand each other files on the output share (CORRAL_VM_OUT/cockpit/):
  ready        the guest: passwords, job ids, corrald's refusal as the CLI prints it (JSON)
  result       the host: "ok", or "FAILED: why"
  bench-ready  the guest: 10,000 jobs queued
  bench        the host: the first view's times (JSON), or "FAILED: why"
Screenshots go to CORRAL_VM_OUT/logs/slow-cockpit.d/, which tests/vm/run keeps with the
logs (build/meson-logs/integration/slow-cockpit.d/).
"""
import json
import os
import sys
import tempfile
import time
import traceback

OUT = os.environ["CORRAL_VM_OUT"]
PORT = os.environ["CORRAL_VM_HOSTFWD_PORT"]
BASE = f"http://127.0.0.1:{PORT}"
X = os.path.join(OUT, "cockpit")
SHOTS = os.path.join(OUT, "logs", "slow-cockpit.d")
# Guest code runs emulated: a click's answer can take seconds.
WAIT = float(os.environ.get("CORRAL_COCKPIT_WAIT", "90"))


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def wait_file(name, timeout):
    path = os.path.join(X, name)
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            time.sleep(0.2)
            with open(path) as f:
                return f.read()
        if os.path.exists(os.path.join(OUT, "guest-exit")):
            return None
        time.sleep(1)
    return None


def put(name, text):
    tmp = os.path.join(X, "." + name)
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(X, name))


try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    IMPORT_ERROR = None
except ImportError as e:
    # The guest's test is told (its result), rather than waiting out its time.
    IMPORT_ERROR = f"{e} (scripts/install-deps installs chromium, chromium-driver and python3-selenium)"


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1280,900",
              "--user-data-dir=" + tempfile.mkdtemp(prefix="corral-chromium.")):
        o.add_argument(a)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    d.set_page_load_timeout(WAIT)
    return d


class Page:
    def __init__(self, d):
        self.d = d

    def wait(self, cond, what, timeout=WAIT):
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.25).until(cond)
        except Exception:
            self.shot("failed")
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")

    def css(self, sel, what=None, timeout=WAIT):
        return self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, sel)), what or sel, timeout)

    def click(self, sel, what=None):
        """Finds and clicks, again if the element was re-rendered in between (the queue
        re-renders when its listing changed: a person's click lands on the new button in
        the same place; selenium's reference to the old one goes stale)."""
        for attempt in range(5):
            try:
                self.css(sel, what).click()
                return
            except StaleElementReferenceException:
                time.sleep(0.3)
        self.css(sel, what).click()

    def visible(self, sel, what=None):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, sel)), what or sel)

    def text_in(self, sel, text, what=None):
        return self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, sel), text), what or f"'{text}' in {sel}")

    def shot(self, name):
        os.makedirs(SHOTS, exist_ok=True)
        self.d.switch_to.default_content()
        self.d.save_screenshot(os.path.join(SHOTS, name + ".png"))
        try:
            self.frame()
        except Exception:
            pass

    def login(self, user, password):
        self.d.delete_all_cookies()
        self.d.get(BASE + "/")
        # The login form shows once its script has run.
        self.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, "#login-user-input")), "Cockpit's login form")
        self.css("#login-user-input").send_keys(user)
        self.css("#login-password-input").send_keys(password)
        self.css("#login-button").click()
        # The shell, once PAM and the bridge (emulated) are through.
        self.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "iframe"), "Cockpit's shell after logging in as " + user)
        log("logged in as", user)

    def frame(self):
        self.d.switch_to.default_content()
        self.wait(EC.frame_to_be_available_and_switch_to_it((By.CSS_SELECTOR, "iframe[name$='/corral']")),
                  "the Corral page's frame")

    def open_corral(self, path=""):
        self.d.switch_to.default_content()
        self.d.get(BASE + "/corral" + path)
        self.frame()

    def go(self, path):
        """A tab of the page already open, as a click on a link in it does."""
        self.frame()
        self.d.execute_script("cockpit.location.go(arguments[0])", path)

    def row(self, job):
        return f"#queue-body tr[data-job='{job}']"

    def tab(self, name):
        self.css("#tab-" + name).click()
        self.visible("#panel-" + name)


def scenario(r):
    d = browser()
    p = Page(d)
    try:
        steps(p, d, r)
    except Exception:
        try:
            p.shot("failed")
        except Exception:
            pass
        raise
    finally:
        d.quit()


def steps(p, d, r):
    if True:
        # alice: her waiting job with its reason, in words.
        p.login("alice", r["alice_password"])
        p.open_corral()
        p.shot("00-shell-corral")
        row = p.css(p.row(r["alice_pending"]), "alice's waiting job in the queue")
        why = p.wait(lambda d: (lambda t: t if t.strip() else False)(
            d.find_element(By.CSS_SELECTOR, p.row(r["alice_pending"]) + " .corral-why").text),
            "the reason of alice's waiting job")
        log("alice's waiting job", r["alice_pending"], "reason:", why)
        first = d.find_element(By.CSS_SELECTOR, "#queue-body tr").get_attribute("data-job")
        assert d.find_element(By.CSS_SELECTOR, f"#queue-body tr[data-job='{first}'] td:nth-child(3)").text == "alice", \
            "alice's own jobs do not come first"
        assert row is not None
        p.shot("01-queue")

        # Keyboard: the tabs move with the arrow keys.
        p.css("#tab-queue").send_keys(Keys.ARROW_RIGHT)
        p.visible("#panel-job", "the Job tab after ArrowRight")
        assert d.switch_to.active_element.get_attribute("id") == "tab-job", "focus did not follow the arrow key"

        # The waiting job's page: corral why's story.
        p.go("/job/" + str(r["alice_pending"]))
        p.visible("#job-view")
        p.text_in("#job-title", "Job %s" % r["alice_pending"])
        p.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#job-why li"), "corral why's sentences on the Job tab")
        p.shot("02-job-waiting")

        # Submit from the form: the command line shown, checked, sent; it runs and its output shows.
        p.go("/submit")
        p.css("#s-command").send_keys("echo cockpit-says-hello; sleep 20; echo cockpit-says-bye")
        p.css("#s-time").send_keys("0:05:00")
        p.text_in("#s-line", "corral submit --time 0:05:00 --output corral-%j.out -- /bin/sh -c")
        p.css("#s-submit").click()
        p.text_in("#s-result", "Submitted job", "the job submitted from the form")
        p.shot("03-submit")
        txt = d.find_element(By.CSS_SELECTOR, "#s-result").text
        new = txt.split("Submitted job ", 1)[1].split(".")[0].strip()
        log("submitted job", new)
        put("submitted", new)
        p.css("#s-result a").click()
        p.text_in("#job-title", "Job " + new)
        p.text_in("#job-log", "cockpit-says-hello", "the job's output, live")
        p.shot("04-job-output")

        # A job refused at --test-only: corrald's words, and nothing queued.
        p.go("/submit")
        p.css("#s-command").clear()
        p.css("#s-time").clear()
        p.css("#s-command").send_keys("true")
        p.css("#s-queue").send_keys("no-such-queue")
        p.css("#s-check").click()
        p.wait(lambda d: "corral-bad" in d.find_element(By.CSS_SELECTOR, "#s-result").get_attribute("class"),
               "the refusal of a job to a queue that does not exist")
        refusal = [line for line in d.find_element(By.CSS_SELECTOR, "#s-result").text.splitlines()
                   if line.startswith("Would not be accepted")]
        log("--test-only refused:", refusal)
        assert refusal == [r["refusal_queue"].strip()], \
            f"the page shows {refusal} where the CLI printed '{r['refusal_queue']}'"
        p.shot("05-submit-refused")

        # Cancel one of hers.
        p.go("/queue")
        p.click(p.row(r["alice_cancel"]) + " button[data-action=cancel]")
        p.text_in("#corral-alert", "Cancel: job %s done" % r["alice_cancel"])
        p.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, p.row(r["alice_cancel"])),
               "the cancelled job to leave the queue")
        put("cancelled", str(r["alice_cancel"]))

        # Refused on bob's: corrald's message as the command prints it.
        p.click(p.row(r["bob_pending"]) + " button[data-action=hold]")
        alert = p.visible("#corral-alert.corral-alert-danger", "the refusal of holding bob's job")
        log("refused:", alert.text)
        assert alert.text.strip() == r["refusal_hold"].strip(), \
            f"the page shows '{alert.text}' where the CLI printed '{r['refusal_hold']}'"
        p.shot("06-refused")

        # Narrow, as in Cockpit on a phone.
        d.set_window_size(480, 900)
        p.css(p.row(r["alice_pending"]))
        p.shot("07-queue-narrow")
        d.set_window_size(1280, 900)

        # root: holds bob's job; the machine and usage tabs.
        p.login("root", r["root_password"])
        p.open_corral()
        p.click(p.row(r["bob_pending"]) + " button[data-action=hold]")
        p.wait(lambda d: d.find_element(By.CSS_SELECTOR, p.row(r["bob_pending"])).get_attribute("data-state") == "HELD",
               "bob's job held by root")
        put("held", str(r["bob_pending"]))
        p.shot("08-queue-root")
        # bob's job's page: its history says who held it.
        p.go("/job/" + str(r["bob_pending"]))
        p.text_in("#job-title", "Job %s" % r["bob_pending"])
        p.text_in("#job-history", "held by an administrator", "the administrator's hold in the job's history")
        hist = d.find_element(By.CSS_SELECTOR, "#job-history").text
        log("bob's job's history:", hist.replace("\n", " | "))
        assert "submitted" in hist.splitlines()[0], f"the history does not begin with the submission: {hist}"
        p.shot("08b-job-history")
        p.go("/machine")
        p.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#m-cpus .corral-cpu"), "the CPUs on the Machine tab")
        p.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#m-queues tr"), "the queues on the Machine tab")
        p.text_in("#m-summary", " waiting, ", "the jobs running and waiting on the Machine tab")
        p.text_in("#m-gpus", "job %s (bob)" % r["bob_run"], "bob's running job holding a GPU on the Machine tab")
        p.text_in("#m-gpus", "free", "the other GPU free on the Machine tab")
        p.shot("09-machine")
        p.go("/usage")
        p.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#u-charts svg, #u-charts p"), "the Usage tab's charts")
        p.shot("10-usage")


def bench(r):
    d = browser()
    p = Page(d)
    try:
        p.login("alice", r["alice_password"])
        t0 = time.monotonic()
        p.open_corral()
        p.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-first-view"),
               "the first view of 10,000 jobs", timeout=300)
        wall = time.monotonic() - t0
        body = d.find_element(By.TAG_NAME, "body")
        rows = len(d.find_elements(By.CSS_SELECTOR, "#queue-body tr"))
        status = d.find_element(By.CSS_SELECTOR, "#queue-status").text
        p.shot("11-queue-10000")
        first = d.find_element(By.CSS_SELECTOR, "#queue-body tr").get_attribute("data-job")
        t1 = time.monotonic()
        p.css("#page-next").click()
        p.wait(lambda d: d.find_element(By.CSS_SELECTOR, "#queue-body tr").get_attribute("data-job") != first,
               "the second page of the queue")
        page2 = time.monotonic() - t1
        return {"first_view_ms": int(body.get_attribute("data-first-view")),
                "first_fetch_ms": int(body.get_attribute("data-first-fetch")),
                "first_marks_ms": json.loads(body.get_attribute("data-first-marks") or "{}"),
                "wall_s": round(wall, 2), "rows_rendered": rows, "status": status,
                "next_page_s": round(page2, 2)}
    finally:
        d.quit()


def main():
    os.makedirs(X, exist_ok=True)
    log("waiting for the guest at", BASE)
    ready = wait_file("ready", 2400)
    if ready is None:
        log("the guest never got ready")
        return 1
    r = json.loads(ready)
    if IMPORT_ERROR:
        put("result", f"FAILED: no browser on the host: {IMPORT_ERROR}\n")
        return 1
    try:
        scenario(r)
        put("result", "ok\n")
    except Exception as e:
        traceback.print_exc()
        put("result", "FAILED: %s\n" % (str(e).strip().splitlines() or [type(e).__name__])[0])
        return 1
    if wait_file("bench-ready", 1800) is None:
        log("the guest did not queue the benchmark's jobs")
        return 1
    try:
        b = bench(r)
        log("benchmark:", b)
        put("bench", json.dumps(b) + "\n")
    except Exception as e:
        traceback.print_exc()
        put("bench", "FAILED: %s\n" % (str(e).strip().splitlines() or [type(e).__name__])[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
