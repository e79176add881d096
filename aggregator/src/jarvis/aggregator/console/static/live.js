// The console's one script: pages that follow server-sent events. Each page shows what there is without it (reload
// to see more); this only puts in what comes next, and the browser resumes a stream by the last event's id.

// A session page's output: each event is a line to append.
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

// An admin table (servers, the audit): "row" is a row as the server renders it, which replaces the row of its id
// or joins the table (on top where data-order="newest-first"); "gone" names a row to remove; "rows" are all of them.
for (const body of document.querySelectorAll("[data-live]")) {
  const source = new EventSource(body.dataset.live);
  const parse = (html) => {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  };
  source.addEventListener("row", (event) => {
    const row = parse(event.data).firstElementChild;
    const old = row.id && document.getElementById(row.id);
    if (old) return old.replaceWith(row);
    body.querySelector(".empty")?.remove();
    if (body.dataset.order === "newest-first") body.prepend(row);
    else body.append(row);
  });
  source.addEventListener("rows", (event) => body.replaceChildren(parse(event.data)));
  source.addEventListener("gone", (event) => document.getElementById(event.data)?.remove());
  for (const kind of ["end", "failed"]) source.addEventListener(kind, () => source.close());
}
