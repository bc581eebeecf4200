#!/usr/bin/env bash
# Renders an HTML report in headless Chromium and saves a screenshot, to look at the page as a
# user would. Not run by CI; needs Debian's chromium (apt-get install -y chromium).
#
#   benchmarks/screenshot_report.sh REPORT.html [OUT.png] [WIDTHxHEIGHT] [OFFSET]
#
# OFFSET (pixels) shows the page from that far down: headless screenshots ignore #fragments,
# so the page is framed at a negative offset instead.
set -euo pipefail
report=$(realpath "${1:?usage: $0 REPORT.html [OUT.png] [WIDTHxHEIGHT] [OFFSET]}")
out=${2:-/tmp/report.png}
size=${3:-1400x2000}
offset=${4:-0}
width=${size%x*}
height=${size#*x}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
page="file://$report"
if [ "$offset" != 0 ]; then
  cat >"$work/frame.html" <<HTML
<!DOCTYPE html><html><body style="margin:0;overflow:hidden">
<iframe src="file://$report" style="position:absolute;left:0;top:-${offset}px;border:0;width:${width}px;height:$((offset + height))px"></iframe>
</body></html>
HTML
  page="file://$work/frame.html"
fi
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/profile" --hide-scrollbars --virtual-time-budget=3000 \
  --allow-file-access-from-files --screenshot="$out" --window-size="$width,$height" "$page" 2>/dev/null
echo "$out"
