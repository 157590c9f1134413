"""TensorBoard's own page on a run's event files, in headless Chromium: the browser test's
server and browser, and the command that made docs/watching.md's screenshot.

    python -m tests.tensorboard_page LOGDIR SHOT.png [RUN TAG [TAGS]]

starts `tensorboard --logdir LOGDIR` on localhost, opens its scalars page filtered to TAGS (a
regex), waits until RUN and TAG are listed, saves the first screen to SHOT.png and ends the server
by its process id.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
START_S = 60
"""TensorBoard's first start imports its plugins: seconds on a loaded 2-core machine."""


def missing_browser() -> list[str]:
    """What the browser check needs and this machine lacks."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    return missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(logdir: str):
    """`tensorboard --logdir logdir` on 127.0.0.1, yielding its URL once it says it serves; ended by
    its process id (and waited for) whatever happens."""
    port = _free_port()
    tensorboard = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    proc = subprocess.Popen([tensorboard, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port),
                             "--reload_interval", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        said = []
        for line in proc.stderr:  # blocks until TensorBoard says where it serves, or exits
            said.append(line)
            if re.search(rf"http://127\.0\.0\.1:{port}/", line):
                break
        else:
            raise RuntimeError(f"tensorboard exited {proc.wait()} before serving: {''.join(said)[-2000:]}")
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def scalars_page(url: str, run: str, tag: str, shot: str | None = None, wait_s: float = START_S,
                 tags: str | None = None) -> dict:
    """Open TensorBoard's scalars page at `url` in headless Chromium, filter it to the tags `tags`
    matches (a regex; `tag` itself by default), wait until it lists `run` and `tag`, and return
    what it listed (and save the first screen to `shot`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    options = Options()
    options.binary_location = CHROMIUM  # both paths given: selenium-manager never downloads anything
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.get(url + "#timeseries")  # the page TensorBoard opens on; its older #scalars sits in shadow DOM

        def shown() -> str:  # a card's title breaks before each '/': "holdout\n/return_mean"
            return driver.execute_script("return document.body ? document.body.innerText : ''").replace("\n/", "/")

        def text(_):
            body = shown()
            return body if run in body and tag in body else False

        def tag_filter(_):  # a run's many groups start collapsed: filter to the tag, as a user would
            found = driver.find_elements(By.CSS_SELECTOR, "input[placeholder^='Filter tags']")
            return found[0] if found else False

        box = WebDriverWait(driver, wait_s).until(tag_filter)
        box.send_keys(tags or tag)
        box.send_keys(Keys.ESCAPE)  # the filter's suggestions would cover the cards

        try:
            body = WebDriverWait(driver, wait_s).until(text)
        except Exception:  # noqa: BLE001 - say what the page showed instead
            body = shown()
            raise AssertionError(f"TensorBoard's page never listed {run!r} and {tag!r}; it showed: {body[:1500]!r}")
        if shot:
            time.sleep(2)  # the cards' charts draw after their titles are listed
            assert driver.save_screenshot(shot), shot
        return {"title": driver.title, "text": body}
    finally:
        driver.quit()


def main(argv: list[str]) -> None:
    logdir, shot = argv[0], argv[1]
    run, tag = (argv[2], argv[3]) if len(argv) >= 4 else ("", "holdout/return_mean")
    with serve(logdir) as url:
        shown = scalars_page(url, run, tag, shot, tags=argv[4] if len(argv) >= 5 else None)
    print(f"{shot}: TensorBoard's scalars page ({shown['title']}) listing {run or 'the runs'} and {tag}")


if __name__ == "__main__":
    main(sys.argv[1:])
