# The financial pack: account statements leave the finance domain for audits only, and then
# with their account numbers masked (docs/policy-packs.md). The mask is a pattern the gateway
# applies to every text of the phase (RE2 syntax, read with Python's re.ASCII).
package claimwatch.packs.financial

statement_tools := {"export_statement"}

iban_pattern := `\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b`

default decision := {
	"decision": "allow",
	"kind": "baseline_allow",
	"claim": "no rule of the financial pack applies",
	"strength": 0.3,
}

decision := {
	"decision": "modify",
	"kind": "financial_masking",
	"claim": "an audit export: account numbers are masked",
	"strength": 0.6,
	"mask": [{"pattern": iban_pattern, "label": "IBAN"}],
} if {
	input.tool in statement_tools
	input.arguments.purpose == "audit"
} else := {
	"decision": "deny",
	"kind": "financial_restricted",
	"claim": sprintf(
		"account statements leave the finance domain for audits only, not for %v",
		[object.get(input.arguments, "purpose", "an unstated purpose")],
	),
	"strength": 0.8,
} if {
	input.tool in statement_tools
}
