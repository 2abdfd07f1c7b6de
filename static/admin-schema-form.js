// SchemaForm: renders the form a client would show for a JSON Schema object (tool arguments, elicitation
// requests), reads its value back and checks it. Plain script, no build step; the schema is tenant input, so
// every text goes in through textContent, never as HTML.
//
//   const form = SchemaForm.render(container, schema, {values, idPrefix});
//   form.value()     -> object (empty optional fields left out)
//   form.validate()  -> string[] (one message per problem; [] when valid), also shown next to the fields
(function () {
  "use strict";

  let formsRendered = 0;
  const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
  const DATE = /^\d{4}-\d{2}-\d{2}$/;
  const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  // ["string", "null"] is a nullable string: the form offers the string.
  function typeOf(schema) {
    const type = schema.type;
    if (Array.isArray(type)) return type.find((t) => t !== "null") || "null";
    if (typeof type === "string") return type;
    if (isObject(schema.properties)) return "object";
    if (choicesOf(schema)) return typeof choicesOf(schema)[0].value === "number" ? "number" : "string";
    return undefined;
  }

  // enum (with MCP's legacy enumNames), or oneOf/anyOf of {const, title}: a list of {value, label}, or null.
  function choicesOf(schema) {
    if (!isObject(schema)) return null;
    if (Array.isArray(schema.enum) && schema.enum.length) {
      const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
      return schema.enum.map((value, i) => ({ value, label: String(names[i] !== undefined ? names[i] : value) }));
    }
    const options = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : null;
    if (options && options.length && options.every((o) => isObject(o) && "const" in o)) {
      return options.map((o) => ({ value: o.const, label: String(o.title !== undefined ? o.title : o.const) }));
    }
    return null;
  }

  function labelOf(schema, name) {
    return typeof schema.title === "string" && schema.title ? schema.title : name;
  }

  function codePoints(text) {
    return Array.from(text).length;
  }

  function sameValue(a, b) {
    return JSON.stringify(a) === JSON.stringify(b);
  }

  // What a primitive schema says about one value: messages without the field's name.
  function primitiveProblems(schema, value) {
    const problems = [];
    const type = typeOf(schema);
    const choices = choicesOf(schema);
    if (choices && !choices.some((c) => sameValue(c.value, value))) problems.push("must be one of the choices");
    if (typeof value === "string") {
      const n = codePoints(value);
      if (typeof schema.minLength === "number" && n < schema.minLength) {
        problems.push(`must be at least ${schema.minLength} characters`);
      }
      if (typeof schema.maxLength === "number" && n > schema.maxLength) {
        problems.push(`must be at most ${schema.maxLength} characters`);
      }
      if (typeof schema.pattern === "string") {
        let pattern = null;
        try {
          pattern = new RegExp(schema.pattern, "u");
        } catch (error) {
          pattern = null; // an unusable pattern is the schema's problem, reported by the editor, not the person's
        }
        if (pattern && !pattern.test(value)) problems.push(`must match the pattern ${schema.pattern}`);
      }
      if (schema.format === "email" && !EMAIL.test(value)) problems.push("must be an e-mail address");
      if (schema.format === "uri" && !/^[a-z][a-z0-9+.-]*:/i.test(value)) problems.push("must be a URI");
      if (schema.format === "date" && !DATE.test(value)) problems.push("must be a date (YYYY-MM-DD)");
      if (schema.format === "date-time" && !DATE_TIME.test(value)) problems.push("must be a date and time");
    }
    if (typeof value === "number") {
      if (type === "integer" && !Number.isInteger(value)) problems.push("must be a whole number");
      if (typeof schema.minimum === "number" && value < schema.minimum) problems.push(`must be at least ${schema.minimum}`);
      if (typeof schema.maximum === "number" && value > schema.maximum) problems.push(`must be at most ${schema.maximum}`);
      if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) {
        problems.push(`must be more than ${schema.exclusiveMinimum}`);
      }
      if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) {
        problems.push(`must be less than ${schema.exclusiveMaximum}`);
      }
      if (typeof schema.multipleOf === "number" && schema.multipleOf > 0) {
        const ratio = value / schema.multipleOf;
        if (Math.abs(ratio - Math.round(ratio)) > 1e-9) problems.push(`must be a multiple of ${schema.multipleOf}`);
      }
    }
    return problems;
  }

  // datetime-local inputs hold local time without a zone; JSON Schema's date-time needs one.
  function toLocalInput(iso) {
    const date = new Date(iso);
    if (typeof iso !== "string" || Number.isNaN(date.getTime())) return "";
    const local = new Date(date.getTime() - date.getTimezoneOffset() * 60000);
    return local.toISOString().slice(0, 19);
  }

  function fromLocalInput(text) {
    const date = new Date(text);
    return Number.isNaN(date.getTime()) ? text : date.toISOString().replace(".000Z", "Z");
  }

  const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

  // The fields of one rendered form: each builds its DOM under `parent` and registers
  // {path, schema, required, frame, control, read() -> {present, value?, error?}}.
  class Form {
    constructor(idPrefix) {
      this.idPrefix = idPrefix;
      this.fields = [];
    }

    id(path) {
      const tail = path.map((p) => String(p).replace(/[^A-Za-z0-9_-]/g, "_")).join("-");
      return `${this.idPrefix}-${tail}`;
    }

    // A labelled block: label (with a required mark), the control, help text and a place for messages.
    frame(parent, path, schema, name, required, labelFor) {
      const wrapper = el("div", { class: "schema-form-field" });
      const label = el(labelFor ? "label" : "span", labelFor ? { for: labelFor } : { id: `${this.id(path)}-label` });
      label.textContent = labelOf(schema, name);
      if (required) label.append(" ", el("span", { class: "schema-form-required", "aria-hidden": "true" }, "*"));
      wrapper.append(label);
      const describedBy = [];
      if (typeof schema.description === "string" && schema.description) {
        const help = el("div", { class: "schema-form-help", id: `${this.id(path)}-help` }, schema.description);
        describedBy.push(help.id);
        wrapper.helpNode = help;
      }
      const error = el("div", { class: "schema-form-error", id: `${this.id(path)}-error`, hidden: true });
      wrapper.errorNode = error;
      parent.append(wrapper);
      return { wrapper, describedBy, error };
    }

    finish(frame, control) {
      if (frame.wrapper.helpNode) frame.wrapper.append(frame.wrapper.helpNode);
      frame.wrapper.append(frame.error);
      const ids = frame.describedBy.join(" ");
      if (ids) control.setAttribute("aria-describedby", ids);
    }

    field(parent, path, schema, name, required, initial) {
      const type = typeOf(schema);
      const choices = choicesOf(schema);
      if (type === "object" && isObject(schema.properties)) return this.object(parent, path, schema, name, required, initial);
      if (type === "array") {
        const itemChoices = choicesOf(schema.items);
        if (itemChoices) return this.multiChoice(parent, path, schema, name, required, initial, itemChoices);
        const itemType = isObject(schema.items) ? typeOf(schema.items) : undefined;
        if (["string", "number", "integer"].includes(itemType)) {
          return this.list(parent, path, schema, name, required, initial);
        }
      }
      if (choices) return this.choice(parent, path, schema, name, required, initial, choices);
      if (type === "boolean") return this.checkbox(parent, path, schema, name, required, initial);
      if (["string", "number", "integer"].includes(type)) return this.input(parent, path, schema, name, required, initial);
      return this.json(parent, path, schema, name, required, initial);
    }

    register(field) {
      this.fields.push(field);
      return field;
    }

    input(parent, path, schema, name, required, initial) {
      const id = this.id(path);
      const type = typeOf(schema);
      const frame = this.frame(parent, path, schema, name, required, id);
      const numeric = type === "number" || type === "integer";
      const attrs = { id, "aria-required": required ? "true" : undefined };
      let control;
      if (numeric) {
        control = el("input", { ...attrs, type: "number", step: type === "integer" ? "1" : "any" });
        if (typeof schema.minimum === "number") control.min = String(schema.minimum);
        if (typeof schema.maximum === "number") control.max = String(schema.maximum);
      } else {
        control = el("input", { ...attrs, type: INPUT_TYPES[schema.format] || "text" });
      }
      if (initial !== undefined && initial !== null) {
        control.value = schema.format === "date-time" ? toLocalInput(initial) : String(initial);
      }
      frame.wrapper.append(control);
      this.finish(frame, control);
      const read = () => {
        const text = control.value;
        if (text === "") {
          // A number input holding text it cannot parse reads as "": the browser knows it was not empty.
          if (numeric && control.validity && control.validity.badInput) return { present: true, error: "must be a number" };
          return { present: false };
        }
        if (numeric) return { present: true, value: Number(text) };
        return { present: true, value: schema.format === "date-time" ? fromLocalInput(text) : text };
      };
      return this.register({ path, schema, name, required, frame, control, read });
    }

    checkbox(parent, path, schema, name, required, initial) {
      const id = this.id(path);
      const frame = this.frame(parent, path, schema, name, false, null);
      frame.wrapper.classList.add("schema-form-checkbox");
      const label = frame.wrapper.firstChild;
      const control = el("input", { id, type: "checkbox" });
      control.checked = initial === true;
      const boxLabel = el("label", { for: id });
      boxLabel.append(control, " ", labelOf(schema, name));
      frame.wrapper.replaceChild(boxLabel, label);
      this.finish(frame, control);
      // A checkbox always has a value: false is an answer, so a required boolean is always satisfied.
      const read = () => ({ present: true, value: control.checked });
      return this.register({ path, schema, name, required, frame, control, read });
    }

    choice(parent, path, schema, name, required, initial, choices) {
      const id = this.id(path);
      const frame = this.frame(parent, path, schema, name, required, id);
      const control = el("select", { id, "aria-required": required ? "true" : undefined });
      control.append(el("option", { value: "" }, required ? "Choose…" : "—"));
      choices.forEach((choice, i) => {
        const option = el("option", { value: String(i) }, choice.label);
        if (initial !== undefined && sameValue(choice.value, initial)) option.selected = true;
        control.append(option);
      });
      frame.wrapper.append(control);
      this.finish(frame, control);
      const read = () => (control.value === "" ? { present: false } : { present: true, value: choices[Number(control.value)].value });
      return this.register({ path, schema, name, required, frame, control, read });
    }

    multiChoice(parent, path, schema, name, required, initial, choices) {
      const frame = this.fieldset(parent, path, schema, name, required);
      const chosen = Array.isArray(initial) ? initial : [];
      const boxes = choices.map((choice, i) => {
        const id = this.id([...path, i]);
        const box = el("input", { id, type: "checkbox", value: String(i) });
        box.checked = chosen.some((v) => sameValue(v, choice.value));
        const label = el("label", { for: id });
        label.append(box, " ", choice.label);
        frame.body.append(label);
        return box;
      });
      this.finish(frame, frame.wrapper);
      const read = () => {
        const value = boxes.filter((b) => b.checked).map((b) => choices[Number(b.value)].value);
        return value.length || required || Array.isArray(initial) ? { present: true, value } : { present: false };
      };
      return this.register({ path, schema, name, required, frame, control: boxes[0], read });
    }

    // An array of strings or numbers: one input per item, with buttons to add and remove items.
    list(parent, path, schema, name, required, initial) {
      const frame = this.fieldset(parent, path, schema, name, required);
      const items = el("ol", { class: "schema-form-list" });
      const add = el("button", { type: "button", class: "button schema-form-add" }, `Add ${labelOf(schema, name)} item`);
      frame.body.append(items, add);
      const itemSchema = schema.items;
      const numeric = ["number", "integer"].includes(typeOf(itemSchema));
      let counter = 0;
      const controls = [];
      const addItem = (value) => {
        counter += 1;
        const id = this.id([...path, "item", counter]);
        const row = el("li");
        const control = el("input", { id, type: numeric ? "number" : INPUT_TYPES[itemSchema.format] || "text" });
        if (numeric) control.step = typeOf(itemSchema) === "integer" ? "1" : "any";
        if (value !== undefined && value !== null) control.value = String(value);
        const position = () => controls.indexOf(control) + 1;
        const label = el("label", { for: id, class: "schema-form-item-label" }, `Item ${counter}`);
        const remove = el("button", { type: "button", class: "button schema-form-remove" }, "Remove");
        remove.setAttribute("aria-label", `Remove item ${counter}`);
        remove.addEventListener("click", () => {
          controls.splice(controls.indexOf(control), 1);
          row.remove();
          add.focus();
        });
        row.append(label, " ", control, " ", remove);
        items.append(row);
        controls.push(control);
        return { control, position };
      };
      (Array.isArray(initial) ? initial : []).forEach((v) => addItem(v));
      add.addEventListener("click", () => addItem().control.focus());
      this.finish(frame, frame.wrapper);
      const read = () => {
        const value = [];
        for (const control of controls) {
          if (control.value === "") continue;
          value.push(numeric ? Number(control.value) : control.value);
        }
        return value.length || required || Array.isArray(initial) ? { present: true, value } : { present: false };
      };
      return this.register({ path, schema, name, required, frame, control: add, read });
    }

    fieldset(parent, path, schema, name, required) {
      const wrapper = el("fieldset", { class: "schema-form-fieldset" });
      const legend = el("legend", {}, labelOf(schema, name));
      if (required) legend.append(" ", el("span", { class: "schema-form-required", "aria-hidden": "true" }, "*"));
      wrapper.append(legend);
      const describedBy = [];
      if (typeof schema.description === "string" && schema.description) {
        const help = el("div", { class: "schema-form-help", id: `${this.id(path)}-help` }, schema.description);
        describedBy.push(help.id);
        wrapper.helpNode = help;
      }
      const body = el("div", { class: "schema-form-body" });
      wrapper.append(body);
      const error = el("div", { class: "schema-form-error", id: `${this.id(path)}-error`, hidden: true });
      parent.append(wrapper);
      return { wrapper, body, describedBy, error };
    }

    object(parent, path, schema, name, required, initial) {
      const frame = path.length ? this.fieldset(parent, path, schema, name, required) : null;
      const body = frame ? frame.body : parent;
      const values = isObject(initial) ? initial : {};
      const requiredNames = Array.isArray(schema.required) ? schema.required : [];
      const children = [];
      for (const [key, child] of Object.entries(schema.properties || {})) {
        if (!isObject(child)) continue;
        const start = key in values ? values[key] : child.default;
        children.push([key, this.field(body, [...path, key], child, key, requiredNames.includes(key), start)]);
      }
      if (!children.length && !path.length) {
        body.append(el("p", { class: "schema-form-empty schema-form-help" }, "This form has no fields."));
      }
      if (frame) this.finish(frame, frame.wrapper);
      const read = () => {
        const value = {};
        for (const [key, field] of children) {
          const answer = field.read();
          if (answer.present && answer.value !== undefined) value[key] = answer.value;
        }
        return Object.keys(value).length || required || isObject(initial) ? { present: true, value } : { present: false };
      };
      const field = { path, schema, name, required, frame, read, children, container: true };
      return frame ? this.register(field) : field;
    }

    // Anything the form has no control for (objects without properties, arrays of objects, $ref): JSON text.
    json(parent, path, schema, name, required, initial) {
      const id = this.id(path);
      const frame = this.frame(parent, path, schema, name, required, id);
      const control = el("textarea", { id, rows: "3", class: "schema-form-json", "aria-required": required ? "true" : undefined });
      if (initial !== undefined) control.value = JSON.stringify(initial, null, 2);
      const note = el("div", { class: "schema-form-help", id: `${id}-json-note` }, "Enter JSON.");
      frame.describedBy.push(note.id);
      frame.wrapper.append(control, note);
      this.finish(frame, control);
      const read = () => {
        if (control.value.trim() === "") return { present: false };
        try {
          return { present: true, value: JSON.parse(control.value) };
        } catch (error) {
          return { present: true, error: "must be valid JSON" };
        }
      };
      return this.register({ path, schema, name, required, frame, control, read, json: true });
    }

    problems(field) {
      const answer = field.read();
      if (answer.error) return [answer.error];
      if (!answer.present) return field.required ? ["is required"] : [];
      if (field.container || field.json) return [];
      const schema = field.schema;
      if (Array.isArray(answer.value)) {
        const problems = [];
        if (typeof schema.minItems === "number" && answer.value.length < schema.minItems) {
          problems.push(`needs at least ${schema.minItems} item${schema.minItems === 1 ? "" : "s"}`);
        }
        if (typeof schema.maxItems === "number" && answer.value.length > schema.maxItems) {
          problems.push(`takes at most ${schema.maxItems} item${schema.maxItems === 1 ? "" : "s"}`);
        }
        if (schema.uniqueItems === true && new Set(answer.value.map((v) => JSON.stringify(v))).size < answer.value.length) {
          problems.push("must not repeat an item");
        }
        if (isObject(schema.items)) {
          answer.value.forEach((item, i) => {
            for (const p of primitiveProblems(schema.items, item)) problems.push(`item ${i + 1} ${p}`);
          });
        }
        return problems;
      }
      return primitiveProblems(schema, answer.value);
    }

    validate() {
      const messages = [];
      // Inside an optional object left empty nothing is asked for: its own required fields wait until it is used.
      const absent = this.fields.filter((f) => f.container && !f.read().present).map((f) => JSON.stringify(f.path).slice(0, -1) + ",");
      for (const field of this.fields) {
        const under = JSON.stringify(field.path);
        const skipped = absent.some((prefix) => under.startsWith(prefix));
        const problems = skipped ? [] : this.problems(field);
        const label = field.path.map((p, i) => (i === field.path.length - 1 ? labelOf(field.schema, p) : p)).join(".");
        const error = field.frame.error;
        const target = field.frame.wrapper.tagName === "FIELDSET" ? field.frame.wrapper : field.control;
        const ids = new Set((target.getAttribute("aria-describedby") || "").split(" ").filter(Boolean));
        if (problems.length) {
          error.textContent = problems.map((p) => `${labelOf(field.schema, field.name)} ${p}.`).join(" ");
          error.hidden = false;
          ids.add(error.id);
          if (target.tagName !== "FIELDSET") target.setAttribute("aria-invalid", "true");
          for (const p of problems) messages.push(`${label} ${p}.`);
        } else {
          error.textContent = "";
          error.hidden = true;
          ids.delete(error.id);
          if (target.tagName !== "FIELDSET") target.removeAttribute("aria-invalid");
        }
        if (ids.size) target.setAttribute("aria-describedby", [...ids].join(" "));
        else target.removeAttribute("aria-describedby");
      }
      return messages;
    }
  }

  function render(container, schema, options) {
    const opts = options || {};
    formsRendered += 1;
    const idPrefix = opts.idPrefix || `schema-form-${formsRendered}`;
    const form = new Form(idPrefix);
    container.replaceChildren();
    container.classList.add("schema-form");
    const root = isObject(schema) ? schema : {};
    const start = isObject(opts.values) ? opts.values : undefined;
    const top = form.object(container, [], { ...root, properties: isObject(root.properties) ? root.properties : {} }, "", false, start);
    return {
      value() {
        const answer = top.read();
        return answer.present ? answer.value : {};
      },
      validate() {
        return form.validate();
      },
    };
  }

  window.SchemaForm = { render };
})();
