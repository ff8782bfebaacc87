#!/usr/bin/python3
"""Drives tarn's web console in headless Chromium (Debian's chromium and chromium-driver, with
python3-selenium), for tests/console_browser_test.cc.

  console_browser.py URL TOPIC GROUP NEW_TOPIC SCREENSHOT_DIR JSON_TOPIC DELETE_TOPIC

Opens the console and reads the overview's two charts (uPlot: the series in each legend and how
many pixels of the first series' colour the canvas holds), goes to TOPIC through the topic list,
reads the first page of its messages and its first partition's segment count, produces a message
with the form on that page, opens the batch inspector on its largest batch, opens GROUP through the
group list and reads its lag, resets its offsets to the latest with the form (confirming the
dialog), creates NEW_TOPIC (two partitions, retention.ms=7200000) with the form on the topics page,
deletes DELETE_TOPIC with its page's button (confirming the dialog), then browses JSON_TOPIC in the
JSON view. Prints one fact per line for the test to check
("overview topics N", "chart ID series A,B drawn-pixels N", "record OFFSET KEY VALUE HEADERS",
"segments SUMMARY", "produced OFFSET", "inspector crc VALUE", "inspector field NAME VALUE" and
"inspector rec CELLS" (every header field and record as shown), record fields lit in the hex,
"inspector hex bytes N pages P" (the whole batch, paged), "lag TOPIC-PARTITION N", "total-lag N",
"reset total-lag N", "created NAME PARTITIONS", "deleted NAME gone"; a JSON value as "json-value
OFFSET", the cell's text over several lines, "json-end"; another as "not-json OFFSET TEXT") and
saves a screenshot of each page.
Exits 0 when every page appeared in time (15 s each), 1 otherwise."""
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait


def main():
    url, topic, group, new_topic, shots, json_topic, doomed = sys.argv[1:8]
    options = webdriver.ChromeOptions()
    options.binary_location = '/usr/bin/chromium'
    for arg in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                '--window-size=1280,900', '--no-first-run', '--disable-extensions'):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=options)
    driver.set_page_load_timeout(15)
    wait = WebDriverWait(driver, 15)
    try:
        driver.get(url + '/')
        card = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '#card-topics .v')))
        print('overview topics', card.text, flush=True)
        # The charts: uPlot draws each series on a canvas; count the pixels near the first
        # series' colour (#0b6bcb, antialiased at the edges) and read the legend's labels.
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '#chart-requests canvas')))
        charts = driver.execute_script('''
            const out = [];
            for (const id of ['chart-bytes', 'chart-requests']) {
              const c = document.querySelector('#' + id + ' canvas');
              const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
              let n = 0;
              for (let i = 0; i < d.length; i += 4) {
                if (Math.abs(d[i] - 0x0b) < 24 && Math.abs(d[i + 1] - 0x6b) < 24 &&
                    Math.abs(d[i + 2] - 0xcb) < 24 && d[i + 3] > 200) n++;
              }
              // The series' names in the legend (without the time axis', should it show).
              const labels = [...document.querySelectorAll('#' + id + ' .u-legend .u-label')]
                .map((e) => e.textContent.trim()).filter((t) => t !== 'Time');
              out.push([id, labels.join(','), n]);
            }
            return out;''')
        for chart_id, labels, pixels in charts:
            print('chart', chart_id, 'series', labels, 'drawn-pixels', pixels, flush=True)
        driver.save_screenshot(os.path.join(shots, 'overview.png'))

        driver.find_element(By.ID, 'nav-topics').click()
        link = wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, 'tr[data-topic="%s"] a' % topic)))
        link.click()
        wait.until(ec.text_to_be_present_in_element((By.ID, 'topic-name'), topic))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '#records tr.record')))
        for row in driver.find_elements(By.CSS_SELECTOR, '#records tr.record'):
            cells = row.find_elements(By.TAG_NAME, 'td')
            print('record', row.get_attribute('data-offset'), cells[2].text, cells[3].text,
                  cells[4].text.replace('\n', ','), flush=True)
        print('segments', driver.find_element(
            By.CSS_SELECTOR, '#partitions td.segments summary').text, flush=True)
        driver.save_screenshot(os.path.join(shots, 'topic.png'))
        # The next page through the browser's own button.
        driver.find_element(By.ID, 'browse-next').click()
        wait.until(ec.presence_of_element_located(
            (By.CSS_SELECTOR, '#records tr.record[data-offset="50"]')))
        print('next-page-first',
              driver.find_element(By.CSS_SELECTOR, '#records tr.record').get_attribute(
                  'data-offset'), flush=True)

        # Produce one message from the page.
        driver.find_element(By.ID, 'produce-key').send_keys('browser-key')
        driver.find_element(By.ID, 'produce-value').send_keys('typed in chromium')
        driver.find_element(By.ID, 'produce-headers').send_keys('typed=yes')
        driver.find_element(By.ID, 'produce-submit').click()
        wait.until(ec.text_to_be_present_in_element((By.ID, 'produce-result'), 'produced at offset'))
        print('produced', driver.find_element(By.ID, 'produce-result').text.split()[-1], flush=True)

        # The batch inspector on partition 0, on its largest batch (the test sends the first
        # record alone): its position in the segment is the sum of the sizes listed before it.
        driver.find_element(By.CSS_SELECTOR, 'a.inspect').click()
        wait.until(ec.presence_of_element_located(
            (By.CSS_SELECTOR, '#batch-fields tr[data-field="crc"] td.data')))
        rows = driver.find_elements(By.CSS_SELECTOR, '#batches tbody tr')
        sizes = [int(r.find_elements(By.TAG_NAME, 'td')[2].text) for r in rows]
        big = sizes.index(max(sizes))
        rows[big].find_element(By.TAG_NAME, 'a').click()
        wait.until(ec.text_to_be_present_in_element(
            (By.CSS_SELECTOR, '#batch-fields tr[data-field="baseOffset"] td.data'),
            rows[big].get_attribute('data-batch')))
        print('inspector position', sum(sizes[:big]), flush=True)
        crc = driver.find_element(By.CSS_SELECTOR, '#batch-fields tr[data-field="crc"] td.data')
        print('inspector crc', crc.text, flush=True)
        count = driver.find_element(By.CSS_SELECTOR, '#batch-fields tr[data-field="recordsCount"] td.data')
        print('inspector records', count.text, flush=True)
        webdriver.ActionChains(driver).move_to_element(
            driver.find_element(By.CSS_SELECTOR, '#batch-hex .byte[data-field="crc"]')).perform()
        lit = driver.find_elements(By.CSS_SELECTOR, '#batch-hex .byte.hl')
        print('inspector highlighted', len(lit), 'bytes', flush=True)
        # Every header field and every record as the page shows them (the test compares them with
        # tarn dump-log --deep-iteration of the segment).
        for row in driver.find_elements(By.CSS_SELECTOR, '#batch-fields tr[data-field]'):
            print('inspector field', row.get_attribute('data-field'),
                  row.find_element(By.CSS_SELECTOR, 'td.data').text, flush=True)
        for row in driver.find_elements(By.CSS_SELECTOR, '#batch-records tbody tr'):
            print('inspector rec', ' '.join(c.text for c in row.find_elements(By.TAG_NAME, 'td')),
                  flush=True)
        # Record-level fields in the bytes: the first record's keyLength (focused in the table)
        # and its key (under the mouse in the hex).
        driver.find_element(By.CSS_SELECTOR, '#batch-records td[data-field="r0.keyLength"]').click()
        print('inspector r0.keyLength lit', len(driver.find_elements(
            By.CSS_SELECTOR, '#batch-hex .byte.hl[data-field="r0.keyLength"]')),
            'bytes, table cells lit', len(driver.find_elements(By.CSS_SELECTOR, '#batch-records td.hl')),
            flush=True)
        webdriver.ActionChains(driver).move_to_element(
            driver.find_element(By.CSS_SELECTOR, '#batch-hex .byte[data-field="r0.key"]')).perform()
        print('inspector r0.key lit', len(driver.find_elements(By.CSS_SELECTOR, '#batch-hex .byte.hl')),
              'bytes', ''.join(chr(int(e.text, 16)) for e in driver.find_elements(
                  By.CSS_SELECTOR, '#batch-hex .byte.hl')), flush=True)
        driver.save_screenshot(os.path.join(shots, 'batch.png'))
        # The whole batch, page by page: the bytes shown in all, and the pages it took.
        shown, pages = 0, 0
        while True:
            shown += len(driver.find_elements(By.CSS_SELECTOR, '#batch-hex .byte'))
            pages += 1
            following = driver.find_element(By.ID, 'batch-hex-next')
            if not following.is_enabled() or pages > 600:
                break
            following.click()
        print('inspector hex bytes', shown, 'pages', pages, flush=True)
        # The last record's value, chosen in the table, turns the hex to its page and lights it.
        last = driver.find_elements(By.CSS_SELECTOR, '#batch-records tbody tr')[-1].get_attribute(
            'data-record')
        driver.find_element(By.ID, 'batch-hex-prev').click()
        driver.find_element(
            By.CSS_SELECTOR, '#batch-records td[data-field="r%s.valueLength"]' % last).click()
        print('inspector last valueLength lit', len(driver.find_elements(
            By.CSS_SELECTOR, '#batch-hex .byte.hl[data-field="r%s.valueLength"]' % last)),
            driver.find_element(By.ID, 'batch-hex-range').text, flush=True)

        driver.find_element(By.ID, 'nav-groups').click()
        link = wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, 'tr[data-group="%s"] a' % group)))
        link.click()
        wait.until(ec.text_to_be_present_in_element((By.ID, 'group-name'), group))
        for row in driver.find_elements(By.CSS_SELECTOR, '#group-offsets tbody tr'):
            print('lag', row.get_attribute('data-partition'),
                  row.find_element(By.CSS_SELECTOR, 'td.lag').text, flush=True)
        print('total-lag', driver.find_element(By.ID, 'group-total-lag').text, flush=True)
        driver.save_screenshot(os.path.join(shots, 'group.png'))
        # Reset the (inactive) group to the latest offsets, confirming the dialog.
        Select(driver.find_element(By.ID, 'reset-to')).select_by_value('latest')
        driver.find_element(By.CSS_SELECTOR, '#reset-offsets button[type=submit]').click()
        wait.until(ec.alert_is_present()).accept()
        wait.until(ec.text_to_be_present_in_element((By.ID, 'group-total-lag'), '0'))
        print('reset total-lag', driver.find_element(By.ID, 'group-total-lag').text, flush=True)

        driver.find_element(By.ID, 'nav-topics').click()
        name = wait.until(ec.element_to_be_clickable((By.ID, 'new-topic-name')))
        name.send_keys(new_topic)
        partitions = driver.find_element(By.ID, 'new-topic-partitions')
        partitions.clear()
        partitions.send_keys('2')
        driver.find_element(By.ID, 'new-topic-configs').send_keys('retention.ms=7200000')
        driver.find_element(By.ID, 'create-topic-submit').click()
        wait.until(ec.text_to_be_present_in_element((By.ID, 'topic-name'), new_topic))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '#partitions > tbody > tr')))
        rows = driver.find_elements(By.CSS_SELECTOR, '#partitions > tbody > tr')
        retention = driver.find_element(
            By.CSS_SELECTOR, 'tr[data-config="retention.ms"] td.data').text
        print('created', new_topic, len(rows), 'retention.ms', retention, flush=True)
        driver.save_screenshot(os.path.join(shots, 'created.png'))
        # Delete DELETE_TOPIC (kcat made it): its page through the topic list, the button, a
        # dismissed confirmation (nothing happens), then an accepted one; the list then has it no
        # more.
        driver.find_element(By.ID, 'nav-topics').click()
        wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, 'tr[data-topic="%s"] a' % doomed))).click()
        wait.until(ec.text_to_be_present_in_element((By.ID, 'topic-name'), doomed))
        driver.find_element(By.ID, 'delete-topic').click()
        wait.until(ec.alert_is_present()).dismiss()
        print('delete dismissed, still on', driver.find_element(By.ID, 'topic-name').text,
              flush=True)
        driver.find_element(By.ID, 'delete-topic').click()
        alert = wait.until(ec.alert_is_present())
        print('delete confirm', alert.text, flush=True)
        alert.accept()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-topic]')))
        listed = [e.get_attribute('data-topic')
                  for e in driver.find_elements(By.CSS_SELECTOR, 'tr[data-topic]')]
        print('deleted', doomed, 'listed' if doomed in listed else 'gone', flush=True)

        # JSON_TOPIC in the JSON view: values pretty-printed, or text with a note.
        driver.find_element(By.ID, 'nav-topics').click()
        wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, 'tr[data-topic="%s"] a' % json_topic))).click()
        wait.until(ec.text_to_be_present_in_element((By.ID, 'topic-name'), json_topic))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '#records tr.record')))
        Select(driver.find_element(By.ID, 'browse-encoding')).select_by_value('json')
        driver.find_element(By.ID, 'browse-load').click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '#records td.value .json')))
        for row in driver.find_elements(By.CSS_SELECTOR, '#records tr.record'):
            offset = row.get_attribute('data-offset')
            pretty = row.find_elements(By.CSS_SELECTOR, 'td.value .json')
            if pretty:
                print('json-value', offset, flush=True)
                print(pretty[0].get_attribute('textContent'), flush=True)
                print('json-end', flush=True)
            else:
                cell = row.find_element(By.CSS_SELECTOR, 'td.value')
                print('not-json', offset, cell.get_attribute('textContent'), flush=True)
        # Nothing stray beside the records (a null child once showed as the text "null").
        print('records-out text-nodes', driver.execute_script(
            "return [...document.getElementById('records-out').childNodes]"
            ".filter((n) => n.nodeType === Node.TEXT_NODE).length"), flush=True)
        driver.save_screenshot(os.path.join(shots, 'json.png'))
        errors = [e for e in driver.get_log('browser') if e.get('level') == 'SEVERE']
        print('console-errors', len(errors), flush=True)
        for e in errors:
            print('  ', e.get('message'), flush=True)
        return 0
    except Exception as e:  # a page that did not appear: say which, with what the page showed
        print('failed', type(e).__name__, str(e).splitlines()[0] if str(e) else '', flush=True)
        try:
            driver.save_screenshot(os.path.join(shots, 'failed.png'))
            print('page', driver.find_element(By.TAG_NAME, 'body').text[:2000], flush=True)
        except Exception:
            pass
        return 1
    finally:
        driver.quit()


if __name__ == '__main__':
    sys.exit(main())
