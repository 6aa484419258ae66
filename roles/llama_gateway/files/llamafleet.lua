-- llamafleet gateway: the two request actions HAProxy's own rules cannot express.
-- Loaded by the rendered haproxy.cfg (lua-load); Debian's lua-cjson parses the body.
--
-- llamafleet_body: reads the buffered request body once and sets
--   txn.llf_body  = "empty" | "malformed" | "not-object" | "no-model" | "bad-model" | "model"
--   txn.llf_model = the body's "model" when it is a string
-- HAProxy's json_query would accept a truncated or malformed body (it stops at the first match), and a request
-- no engine could parse must be refused at the gateway, before any backend sees it.
--
-- llamafleet_wait(limit_ms): while the chosen backend has no usable server (every replica drained for a restart,
-- or still loading), waits up to limit_ms in 100 ms steps, so that a model with a single replica queues requests
-- during its restart instead of failing them at once. HAProxy's own queue only holds requests while some server
-- is up and full. Sleeping does not count against tune.lua.session-timeout.

local cjson = require("cjson.safe")

core.register_action("llamafleet_body", { "http-req" }, function(txn)
  local body = txn.f:req_body()
  if body == nil or body:match("^%s*$") then
    txn:set_var("txn.llf_body", "empty")
    return
  end
  local document = cjson.decode(body)
  if document == nil then
    txn:set_var("txn.llf_body", "malformed")
    return
  end
  -- cjson decodes arrays to tables too; only an object can name a model.
  if type(document) ~= "table" or not body:match("^%s*{") then
    txn:set_var("txn.llf_body", "not-object")
    return
  end
  local model = document["model"]
  if model == nil or model == cjson.null then
    txn:set_var("txn.llf_body", "no-model")
  elseif type(model) ~= "string" then
    txn:set_var("txn.llf_body", "bad-model")
  else
    txn:set_var("txn.llf_body", "model")
    txn:set_var("txn.llf_model", model)
  end
end, 0)

core.register_action("llamafleet_wait", { "http-req" }, function(txn, limit_ms)
  local backend = txn.f:be_name()
  local limit = tonumber(limit_ms) or 0
  local waited = 0
  while txn.f:nbsrv(backend) == 0 and waited < limit do
    core.msleep(100)
    waited = waited + 100
  end
  txn:set_var("txn.llf_waited_ms", waited)
end, 1)
