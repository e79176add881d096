// The console's one script: a session page's output, live over server-sent events. The page shows the output so far
// without it; this only appends what comes next, and the browser resumes the stream by the last event's id.
for (const output of document.querySelectorAll("[data-stream]")) {
  const source = new EventSource(output.dataset.stream);
  source.onmessage = (event) => {
    const line = document.createElement("div");
    line.dataset.seq = event.lastEventId;
    line.textContent = event.data;
    output.append(line);
  };
  const finish = (event) => {
    source.close();
    const state = document.getElementById("state");
    if (state && event.data) state.textContent = event.data;
  };
  source.addEventListener("end", finish);
  source.addEventListener("failed", finish);
}
