// The tool console: builds the arguments form from the tool's inputSchema (or a JSON editor, the "Edit as JSON"
// toggle), runs the tool (a POST answered with an event stream), and shows its progress, messages, questions, raw
// JSON-RPC exchange and outcome as they come. Questions are answered (Enter submits) and the run is cancelled with
// POSTs of their own. A finished run joins the admin's history, whose runs open again (result, exchange, the call as
// code to copy) and run again with their arguments. Forms come from window.SchemaForm (admin-schema-form.js) when
// it is there, else a JSON text box.
(function () {
  "use strict";

  var config = JSON.parse(document.getElementById("console-config").textContent);
  var form = document.getElementById("console-form");
  var runButton = document.getElementById("console-run");
  var cancelButton = document.getElementById("console-cancel");
  var statusLine = document.getElementById("console-status");
  var formErrors = document.getElementById("console-form-errors");
  var log = document.getElementById("console-log");
  var questions = document.getElementById("console-questions");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var runId = null;
  var questionCount = 0;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, attrs[name]); });
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }

  // A form for ``schema`` in ``container``: { value(), validate() } as SchemaForm returns it.
  function schemaForm(container, schema, idPrefix, values) {
    if (window.SchemaForm) {
      return window.SchemaForm.render(container, schema, { values: values || {}, idPrefix: idPrefix });
    }
    var id = idPrefix + "-json";
    var label = el("label", { "for": id }, "As JSON");
    var box = el("textarea", { id: id, rows: "6", cols: "60", "class": "vLargeTextField" });
    box.value = JSON.stringify(values || {}, null, 2);
    var row = el("div", { "class": "form-row" });
    row.appendChild(label);
    row.appendChild(box);
    container.appendChild(row);
    return {
      value: function () { return JSON.parse(box.value || "{}"); },
      validate: function () {
        try {
          var parsed = JSON.parse(box.value || "{}");
          return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? [] : ["Give a JSON object."];
        } catch (error) {
          return ["Not JSON: " + error.message];
        }
      }
    };
  }

  var argumentsBox = document.getElementById("console-arguments");
  var argumentsForm = schemaForm(argumentsBox, config.inputSchema, "arg");
  var modeButton = document.getElementById("console-mode");
  var jsonRow = document.getElementById("console-json-row");
  var jsonBox = document.getElementById("console-json");
  var jsonMode = false;
  // Keys the form has no field for (given in JSON mode, or by a run again): kept and sent with the form's values.
  var extraArguments = {};
  var schemaKeys = Object.keys((config.inputSchema && config.inputSchema.properties) || {});

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  // The arguments as the form holds them, with the keys it has no field for.
  function formArguments() {
    return Object.assign({}, extraArguments, argumentsForm.value());
  }

  // The JSON box's object, or the reason it is not one.
  function parsedJson() {
    try {
      var parsed = JSON.parse(jsonBox.value.trim() === "" ? "{}" : jsonBox.value);
      return isObject(parsed) ? { value: parsed } : { problem: "The arguments must be a JSON object ({ ... })." };
    } catch (error) {
      return { problem: "The arguments are not valid JSON: " + error.message };
    }
  }

  function jsonProblem(problem) {
    formErrors.textContent = "";
    if (problem) { formErrors.appendChild(el("li", {}, problem)); }
    formErrors.hidden = !problem;
    if (problem) { jsonBox.setAttribute("aria-invalid", "true"); } else { jsonBox.removeAttribute("aria-invalid"); }
  }

  // Fill the form with ``values`` (keys it has no field for are kept aside).
  function fillForm(values) {
    extraArguments = {};
    Object.keys(values).forEach(function (key) {
      if (schemaKeys.indexOf(key) < 0) { extraArguments[key] = values[key]; }
    });
    argumentsForm = schemaForm(argumentsBox, config.inputSchema, "arg", values);
  }

  function setMode(json) {
    jsonMode = json;
    argumentsBox.hidden = json;
    jsonRow.hidden = !json;
    modeButton.textContent = json ? "Edit as a form" : "Edit as JSON";
    modeButton.setAttribute("aria-pressed", json ? "true" : "false");
  }

  modeButton.addEventListener("click", function () {
    if (!jsonMode) {
      jsonBox.value = JSON.stringify(formArguments(), null, 2);
      showErrors([]);
      setMode(true);
      jsonBox.focus();
      return;
    }
    // Back to the form only with an object: what was typed stays in the box until it is one.
    var parsed = parsedJson();
    jsonProblem(parsed.problem);
    if (parsed.problem) { jsonBox.focus(); return; }
    fillForm(parsed.value);
    setMode(false);
  });

  // The arguments to send, or null after showing why there are none.
  function currentArguments() {
    if (jsonMode) {
      var parsed = parsedJson();
      jsonProblem(parsed.problem);
      return parsed.problem ? null : parsed.value;
    }
    var problems = argumentsForm.validate();
    showErrors(problems);
    return problems.length ? null : formArguments();
  }

  // SchemaForm shows its messages next to the fields; the JSON box has this list.
  function showErrors(messages) {
    if (window.SchemaForm) { messages = []; }
    formErrors.textContent = "";
    messages.forEach(function (message) { formErrors.appendChild(el("li", {}, message)); });
    formErrors.hidden = messages.length === 0;
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body)
    });
  }

  function addLog(kind, text) {
    var item = el("li", { "class": "console-" + kind });
    item.appendChild(el("strong", {}, kind + ": "));
    item.appendChild(document.createTextNode(text));
    log.appendChild(item);
  }

  function text(value) {
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  function onNotification(message) {
    var params = message.params || {};
    if (message.method === "notifications/progress") {
      var bar = document.getElementById("console-progress");
      document.getElementById("console-progress-row").hidden = false;
      if (typeof params.total === "number") { bar.max = params.total; }
      bar.value = params.progress;
      var shown = params.progress + (typeof params.total === "number" ? " / " + params.total : "");
      document.getElementById("console-progress-text").textContent = shown + (params.message ? " " + params.message : "");
      addLog("progress", shown + (params.message ? " " + params.message : ""));
    } else if (message.method === "notifications/message") {
      addLog(params.level || "log", (params.logger ? "[" + params.logger + "] " : "") + text(params.data));
    } else if (message.method === "notifications/tasks/status") {
      addLog("task", params.status + (params.statusMessage ? ": " + params.statusMessage : ""));
    } else {
      addLog("notice", message.method);
    }
  }

  function answer(requestId, body, panel) {
    if (panel.dataset.answered) { return; }  // one answer per question, however often Enter is pressed
    panel.dataset.answered = "true";
    body.runId = runId;
    body.requestId = requestId;
    panel.querySelectorAll("button").forEach(function (button) { button.disabled = true; });
    post(config.urls.answer, body).then(function (response) {
      if (!response.ok) { addLog("error", "The answer was not delivered (" + response.status + ")."); }
    });
  }

  function buttons(panel, specs) {
    var row = el("div", { "class": "submit-row" });
    specs.forEach(function (spec) {
      var button = el("button", { type: spec.submit ? "submit" : "button", "class": spec.primary ? "button default" : "button" }, spec.label);
      if (spec.action) { button.addEventListener("click", spec.action); }
      row.appendChild(button);
    });
    panel.appendChild(row);
  }

  function onRequest(request) {
    questionCount += 1;
    var headingId = "console-question-" + questionCount;
    var panel = el("section", { "class": "module console-question", "data-request": request.id, "aria-labelledby": headingId });
    var params = request.params || {};
    if (request.method === "elicitation/create") {
      panel.appendChild(el("h3", { id: headingId }, "The tool asks"));
      panel.appendChild(el("p", {}, params.message || ""));
      // A form of its own: Enter in a field submits the answer, as in any form.
      var answerBox = el("form", { novalidate: "" });
      var fields = el("div", {});
      answerBox.appendChild(fields);
      var errors = el("ul", { "class": "errorlist", hidden: "" });
      answerBox.appendChild(errors);
      var answerForm = schemaForm(fields, params.requestedSchema || { type: "object" }, "q" + questionCount);
      buttons(answerBox, [
        { label: "Submit", primary: true, submit: true },
        { label: "Decline", action: function () { answer(request.id, { result: { action: "decline" } }, panel); } },
        { label: "Dismiss", action: function () { answer(request.id, { result: { action: "cancel" } }, panel); } }
      ]);
      answerBox.addEventListener("submit", function (submitted) {
        submitted.preventDefault();
        var problems = answerForm.validate();
        errors.textContent = "";
        if (!window.SchemaForm) {
          problems.forEach(function (problem) { errors.appendChild(el("li", {}, problem)); });
        }
        errors.hidden = errors.childElementCount === 0;
        if (!problems.length) { answer(request.id, { result: { action: "accept", content: answerForm.value() } }, panel); }
      });
      // Browsers submit on Enter in a text field; a checkbox or a choice's radio button does too here.
      answerBox.addEventListener("keydown", function (pressed) {
        var target = pressed.target;
        if (pressed.key === "Enter" && target.tagName === "INPUT" && /^(checkbox|radio)$/.test(target.type)) {
          pressed.preventDefault();
          answerBox.requestSubmit();
        }
      });
      panel.appendChild(answerBox);
    } else if (request.method === "sampling/createMessage") {
      panel.appendChild(el("h3", { id: headingId }, "The tool asks for a model's completion"));
      var conversation = el("ol", {});
      (params.messages || []).forEach(function (message) {
        var content = message.content || {};
        conversation.appendChild(el("li", {}, message.role + ": " + (content.type === "text" ? content.text : text(content))));
      });
      panel.appendChild(conversation);
      if (params.systemPrompt) { panel.appendChild(el("p", {}, "System prompt: " + params.systemPrompt)); }
      var replyId = "q" + questionCount + "-reply";
      panel.appendChild(el("label", { "for": replyId }, "Reply as the model"));
      var reply = el("textarea", { id: replyId, rows: "3", cols: "60", "class": "vLargeTextField" });
      panel.appendChild(reply);
      buttons(panel, [
        { label: "Send the reply", primary: true, action: function () {
          answer(request.id, { result: {
            role: "assistant", content: { type: "text", text: reply.value }, model: "console", stopReason: "endTurn"
          } }, panel);
        } },
        { label: "Decline", action: function () { answer(request.id, { error: "Declined in the console" }, panel); } }
      ]);
    } else {
      panel.appendChild(el("h3", { id: headingId }, "The tool asks " + request.method));
      buttons(panel, [{ label: "Decline", action: function () {
        answer(request.id, { error: "The console does not answer " + request.method }, panel);
      } }]);
    }
    questions.appendChild(panel);
    statusLine.textContent = "Waiting for your answer.";
    var first = panel.querySelector("input, select, textarea, button");
    if (first) { first.focus(); }
  }

  function onAnswered(data) {
    var panel = questions.querySelector('[data-request="' + data.id + '"]');
    if (panel) { panel.remove(); }
    statusLine.textContent = "Running.";
  }

  function showContent(container, items) {
    (items || []).forEach(function (item) {
      if (item.type === "text") {
        container.appendChild(el("pre", { "class": "console-text", tabindex: "0" }, item.text));
      } else if (item.type === "image" && /^image\/(png|jpeg|gif|webp)$/.test(item.mimeType || "")) {
        container.appendChild(el("img", { src: "data:" + item.mimeType + ";base64," + item.data, alt: "An image the tool returned" }));
      } else {
        container.appendChild(el("pre", { "class": "console-text", tabindex: "0" }, JSON.stringify(item, null, 2)));
      }
    });
  }

  var OUTCOMES = {
    ok: "Finished.",
    tool_error: "Finished with a tool error.",
    error: "Failed.",
    rate_limited: "Refused by a rate limit.",
    cancelled: "Cancelled."
  };

  var exchange = document.getElementById("console-exchange");

  function addWire(item) {
    var sent = item.direction === "sent";
    var row = el("li", { "class": "console-wire-" + item.direction });
    row.appendChild(el("span", { "class": "console-direction" },
      sent ? "→ to the server" : item.direction === "received" ? "← from the server" : "(left out)"));
    row.appendChild(el("pre", { "class": "console-text", tabindex: "0" }, JSON.stringify(item.message)));
    exchange.appendChild(row);
  }

  // The call as code: the chosen form's text, the others a button away.
  var codeBox = document.getElementById("console-code");
  var codeText = document.getElementById("console-code-text");
  var code = null;
  var codeChoice = "python";
  function showCode(chosen) {
    codeChoice = chosen;
    codeBox.querySelectorAll("button[data-code]").forEach(function (button) {
      button.setAttribute("aria-pressed", button.dataset.code === chosen ? "true" : "false");
    });
    codeText.textContent = code ? code[chosen] : "";
  }
  codeBox.querySelectorAll("button[data-code]").forEach(function (button) {
    button.addEventListener("click", function () { showCode(button.dataset.code); });
  });

  function getJson(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (response) {
      if (!response.ok) { throw new Error("HTTP " + response.status); }
      return response.json();
    });
  }

  // A kept run's code (and, when it is opened from the history, its result and exchange).
  function loadRun(id) {
    return getJson(config.urls.runs + id + "/").then(function (detail) {
      code = detail.code;
      codeBox.hidden = false;
      showCode(codeChoice);
      return detail;
    });
  }

  // The history's table: the admin's runs of this tool, newest first.
  var historyRows = document.getElementById("console-history-rows");
  function durationText(ms) {
    return (ms / 1000).toFixed(3) + " s";
  }
  function historyRow(run) {
    var row = el("tr", { "data-run": String(run.id) });
    var when = new Date(run.startedAt);
    var whenText = isNaN(when.getTime()) ? run.startedAt : when.toLocaleString();
    // data-label names a cell where a narrow screen shows the rows as blocks, without the table's header.
    row.appendChild(el("td", { "data-label": "Started" }, whenText));
    row.appendChild(el("td", { "data-label": "Outcome" }, run.outcomeLabel + (run.asTask ? " (task)" : "")));
    row.appendChild(el("td", { "data-label": "Duration" }, durationText(run.durationMs)));
    var shown = JSON.stringify(run.arguments);
    var argumentsCell = el("td", { "data-label": "Arguments" });
    argumentsCell.appendChild(el("code", {}, shown.length > 120 ? shown.slice(0, 119) + "…" : shown));
    row.appendChild(argumentsCell);
    var actions = el("td", { "class": "console-history-actions" });
    var open = el("button", { type: "button", "class": "button", "aria-label": "Open the run of " + whenText }, "Open");
    open.addEventListener("click", function () { openRun(run, whenText); });
    var again = el("button", { type: "button", "class": "button", "aria-label": "Run again with the arguments of " + whenText }, "Run again");
    again.addEventListener("click", function () { runAgain(run); });
    actions.appendChild(open);
    actions.appendChild(again);
    row.appendChild(actions);
    return row;
  }
  function addHistory(run, first) {
    var row = historyRow(run);
    if (first) { historyRows.insertBefore(row, historyRows.firstChild); } else { historyRows.appendChild(row); }
    while (historyRows.childElementCount > 50) { historyRows.removeChild(historyRows.lastChild); }
    document.getElementById("console-history").hidden = false;
    document.getElementById("console-history-empty").hidden = true;
  }
  (config.history || []).forEach(function (run) { addHistory(run, false); });

  function openRun(run, whenText) {
    if (runId) { return; }
    reset();
    statusLine.textContent = "Opening the run of " + whenText + ".";
    loadRun(run.id).then(function (detail) {
      (detail.exchange || []).forEach(addWire);
      showOutcome(detail);
      statusLine.textContent = "Run of " + whenText + ": " + (OUTCOMES[detail.outcome] || detail.outcome);
      document.getElementById("console-run-heading").scrollIntoView();
    }).catch(function (error) {
      statusLine.textContent = "The run could not be opened: " + error.message;
    });
  }

  function runAgain(run) {
    if (runId) { return; }
    if (jsonMode) {
      jsonBox.value = JSON.stringify(run.rerunArguments, null, 2);
    } else {
      fillForm(run.rerunArguments);
    }
    form.requestSubmit();
  }

  function onOutcome(data) {
    runId = null;
    cancelButton.disabled = true;
    runButton.disabled = false;
    questions.textContent = "";
    statusLine.textContent = OUTCOMES[data.outcome] || data.outcome;
    showOutcome(data);
    if (data.record) {
      addHistory(data.record, true);
      loadRun(data.record.id).catch(function () { codeBox.hidden = true; });
    }
  }

  function showOutcome(data) {
    var outcome = document.getElementById("console-outcome");
    var content = document.getElementById("console-content");
    content.textContent = "";
    outcome.hidden = false;
    document.getElementById("console-duration").textContent =
      "Duration: " + (data.durationMs / 1000).toFixed(3) + " s" + (data.taskId ? " (task " + data.taskId + ")" : "");
    if (data.result && data.result._omitted) {
      content.appendChild(el("p", {}, "The result was not kept: " + data.result._omitted + "."));
      document.getElementById("console-structured-row").hidden = true;
    } else if (data.result) {
      showContent(content, data.result.content);
      var structured = data.result.structuredContent;
      document.getElementById("console-structured-row").hidden = structured === undefined;
      document.getElementById("console-structured").textContent = structured === undefined ? "" : JSON.stringify(structured, null, 2);
    } else if (data.error) {
      content.appendChild(el("p", { "class": "errornote" }, data.error.message + (data.error.code ? " (" + data.error.code + ")" : "")));
      document.getElementById("console-structured-row").hidden = true;
    }
  }

  function onEvent(name, data) {
    if (name === "run") {
      runId = data.runId;
      cancelButton.disabled = false;
      statusLine.textContent = "Running.";
    } else if (name === "task") {
      addLog("task", "started as task " + data.taskId + " (" + data.status + ")");
    } else if (name === "notification") {
      onNotification(data);
    } else if (name === "request") {
      onRequest(data);
    } else if (name === "answered") {
      onAnswered(data);
    } else if (name === "wire") {
      addWire(data);
    } else if (name === "outcome") {
      onOutcome(data);
    }
  }

  // Server-sent events from a fetch body: blocks separated by a blank line, ``event:`` and ``data:`` fields.
  function readEvents(response) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function handle(block) {
      var name = "message";
      var data = [];
      block.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) { name = line.slice(6).trim(); }
        if (line.indexOf("data:") === 0) { data.push(line.slice(5).replace(/^ /, "")); }
      });
      if (data.length) { onEvent(name, JSON.parse(data.join("\n"))); }
    }
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) { return; }
        buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, "\n");
        var end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          handle(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
        return pump();
      });
    }
    return pump();
  }

  function reset() {
    log.textContent = "";
    exchange.textContent = "";
    code = null;
    codeBox.hidden = true;
    questions.textContent = "";
    document.getElementById("console-outcome").hidden = true;
    document.getElementById("console-progress-row").hidden = true;
    document.getElementById("console-progress").removeAttribute("value");
    document.getElementById("console-progress-text").textContent = "";
  }

  form.addEventListener("submit", function (submitted) {
    submitted.preventDefault();
    if (runId || runButton.disabled) { return; }
    var runArguments = currentArguments();
    if (runArguments === null) { return; }
    var asTask = document.getElementById("console-as-task");
    reset();
    runButton.disabled = true;
    statusLine.textContent = "Starting.";
    post(config.urls.run, { arguments: runArguments, asTask: asTask ? asTask.checked : false })
      .then(function (response) {
        if (!response.ok) {
          return response.json().catch(function () { return { error: "HTTP " + response.status }; }).then(function (body) {
            throw new Error(body.error || "HTTP " + response.status);
          });
        }
        return readEvents(response);
      })
      .catch(function (error) {
        statusLine.textContent = "The run could not go on: " + error.message;
      })
      .then(function () {
        runButton.disabled = false;
        cancelButton.disabled = true;
      });
  });

  cancelButton.addEventListener("click", function () {
    if (!runId) { return; }
    cancelButton.disabled = true;
    statusLine.textContent = "Cancelling.";
    post(config.urls.cancel, { runId: runId });
  });
})();
