// Follows /api/v1/events and adds each event to the top of the log table;
// the page works without it (the table is rendered on the server).
(function () {
  const body = document.querySelector("#log tbody");
  const state = document.getElementById("stream-state");
  if (!body || !window.EventSource) return;
  const first = body.querySelector("tr[data-id]");
  const last = first ? first.getAttribute("data-id") : "";
  const es = new EventSource("/api/v1/events" + (last ? "?last_event_id=" + encodeURIComponent(last) : ""));
  const cell = (text, cls) => { const td = document.createElement("td"); td.textContent = text || ""; if (cls) td.className = cls; return td; };
  const add = (msg) => {
    const e = JSON.parse(msg.data);
    if (body.querySelector('tr[data-id="' + e.id + '"]')) return;
    const tr = document.createElement("tr");
    tr.setAttribute("data-id", e.id);
    const t = new Date(e.time);
    tr.append(cell(t.toISOString().slice(11, 19)), cell(e.kind), cell((e.tool || e.backend || "") + " " + (e.detail || "")),
      cell(e.identity), cell(e.tier), cell(e.outcome, "outcome " + (e.outcome || "")), cell(e.duration_ms ? e.duration_ms.toFixed(1) : ""));
    body.prepend(tr);
    while (body.rows.length > 500) body.deleteRow(body.rows.length - 1);
  };
  ["call", "backend", "drift", "register", "deregister", "reload", "hidden", "exec"].forEach((k) => es.addEventListener(k, add));
  es.onopen = () => { state.textContent = "Following live."; };
  es.onerror = () => { state.textContent = "Reconnecting…"; };
})();
