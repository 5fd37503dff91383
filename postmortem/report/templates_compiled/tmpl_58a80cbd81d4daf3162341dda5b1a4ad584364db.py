from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = '_verdict.html.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_v = resolve('v')
    l_0_category_label = resolve('category_label')
    l_0_a = resolve('a')
    l_0_evidence = resolve('evidence')
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    try:
        t_2 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    pass
    yield '<section id="verdict" class="card verdict" aria-labelledby="verdict-title">\n  <div class="verdict-head">\n    <span class="badge cat-'
    yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'category'), 'value')))
    yield '">'
    yield escape(environment.finalize((undefined(name='category_label') if l_0_category_label is missing else l_0_category_label)))
    yield '</span>\n    <h2 id="verdict-title" class="cause">'
    yield escape(environment.finalize(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'cause')))
    yield '</h2>\n    <span class="confidence" title="confidence '
    yield escape(environment.finalize(t_1('%.2f', environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'confidence'))))
    yield '">\n      <meter min="0" max="1" low="0.5" high="0.8" optimum="1" value="'
    yield escape(environment.finalize(t_1('%.2f', environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'confidence'))))
    yield '"></meter>\n      confidence '
    yield escape(environment.finalize(t_1('%.2f', environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'confidence'))))
    yield '\n    </span>\n  </div>\n  <p class="summary">'
    yield escape(environment.finalize(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'summary')))
    yield '</p>\n'
    for l_1_note in environment.getattr((undefined(name='a') if l_0_a is missing else l_0_a), 'limits'):
        _loop_vars = {}
        pass
        yield '<p class="note limit">Note: '
        yield escape(environment.finalize(l_1_note))
        yield '</p>'
    l_1_note = missing
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'explanation'):
        pass
        yield '<p class="explanation">'
        yield escape(environment.finalize(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'explanation')))
        yield '</p>'
    yield '\n'
    if (environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'root') and (undefined(name='evidence') if l_0_evidence is missing else l_0_evidence)):
        pass
        yield '  <p class="cites">Root evidence:\n'
        def t_3(fiter):
            for l_1_item in fiter:
                if (environment.getattr(l_1_item, 'why') == 'root'):
                    yield l_1_item
        for l_1_item in t_3((undefined(name='evidence') if l_0_evidence is missing else l_0_evidence)):
            _loop_vars = {}
            pass
            yield '    <a href="#'
            yield escape(environment.finalize(environment.getattr(l_1_item, 'anchor')))
            yield '" class="cite">['
            yield escape(environment.finalize(environment.getattr(l_1_item, 'number')))
            yield '] '
            yield escape(environment.finalize(context.call(environment.getattr(environment.getattr(l_1_item, 'ref'), 'describe'), _loop_vars=_loop_vars)))
            yield '</a>\n'
        l_1_item = missing
        yield '  </p>\n'
    yield '\n  <div class="columns">\n'
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'remediation'):
        pass
        yield '  <div>\n    <h3>Fix</h3>\n    <ul class="fix">\n'
        for l_1_line in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'remediation'):
            l_1_code_spans = resolve('code_spans')
            _loop_vars = {}
            pass
            yield '      <li>'
            for (l_2_part, l_2_is_code) in context.call((undefined(name='code_spans') if l_1_code_spans is missing else l_1_code_spans), l_1_line, _loop_vars=_loop_vars):
                _loop_vars = {}
                pass
                if l_2_is_code:
                    pass
                    yield '<code>'
                    yield escape(environment.finalize(l_2_part))
                    yield '</code>'
                else:
                    pass
                    yield escape(environment.finalize(l_2_part))
            l_2_part = l_2_is_code = missing
            yield '</li>\n'
        l_1_line = l_1_code_spans = missing
        yield '    </ul>\n  </div>\n'
    if (environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'commands') or environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'steps')):
        pass
        yield '  <div>\n    <h3>Next commands</h3>\n'
        if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'commands'):
            pass
            yield '    <ul class="commands">\n'
            for l_1_command in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'commands'):
                _loop_vars = {}
                pass
                yield '      <li><pre><code>'
                yield escape(environment.finalize(l_1_command))
                yield '</code></pre><button type="button" class="copy" aria-label="copy command">copy</button></li>\n'
            l_1_command = missing
            yield '    </ul>\n'
        if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'steps'):
            pass
            yield '    <ul class="steps">\n'
            for l_1_line in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'steps'):
                l_1_code_spans = resolve('code_spans')
                _loop_vars = {}
                pass
                yield '      <li>'
                for (l_2_part, l_2_is_code) in context.call((undefined(name='code_spans') if l_1_code_spans is missing else l_1_code_spans), l_1_line, _loop_vars=_loop_vars):
                    _loop_vars = {}
                    pass
                    if l_2_is_code:
                        pass
                        yield '<code>'
                        yield escape(environment.finalize(l_2_part))
                        yield '</code>'
                    else:
                        pass
                        yield escape(environment.finalize(l_2_part))
                l_2_part = l_2_is_code = missing
                yield '</li>\n'
            l_1_line = l_1_code_spans = missing
            yield '    </ul>\n'
        yield '  </div>\n'
    yield '  </div>\n\n'
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'collect'):
        pass
        yield '  <h3>What to collect</h3>\n  <p class="muted">No cause is supported well enough. These would decide it:</p>\n  <ul class="collect">\n'
        for l_1_line in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'collect'):
            l_1_code_spans = resolve('code_spans')
            _loop_vars = {}
            pass
            yield '    <li>'
            for (l_2_part, l_2_is_code) in context.call((undefined(name='code_spans') if l_1_code_spans is missing else l_1_code_spans), l_1_line, _loop_vars=_loop_vars):
                _loop_vars = {}
                pass
                if l_2_is_code:
                    pass
                    yield '<code>'
                    yield escape(environment.finalize(l_2_part))
                    yield '</code>'
                else:
                    pass
                    yield escape(environment.finalize(l_2_part))
            l_2_part = l_2_is_code = missing
            yield '</li>\n'
        l_1_line = l_1_code_spans = missing
        yield '  </ul>\n'
    yield '\n  <h3>Counter-evidence</h3>\n'
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'counter_evidence'):
        pass
        yield '  <ul class="counter">'
        for l_1_line in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'counter_evidence'):
            _loop_vars = {}
            pass
            yield '<li>'
            yield escape(environment.finalize(l_1_line))
            yield '</li>'
        l_1_line = missing
        yield '</ul>\n'
    else:
        pass
        yield '  <p class="muted">None found: no measured state in the bundle speaks against this cause.</p>\n'
    yield '\n'
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'launcher_root'):
        pass
        yield '  <h3>Launcher\'s root cause <span class="muted">(weighed, not taken)</span></h3>\n  <p class="launcher-root">'
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'launcher_root'), 'note')))
        yield '</p>\n'
    yield '\n'
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'symptoms'):
        pass
        yield '  <details class="fold">\n    <summary>Symptoms: consequences of the root ('
        yield escape(environment.finalize(t_2(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'symptoms'))))
        yield ')</summary>\n    <ul>'
        for l_1_f in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'symptoms'):
            _loop_vars = {}
            pass
            yield '<li><b>'
            yield escape(environment.finalize(environment.getattr(l_1_f, 'cause')))
            yield '</b> ('
            yield escape(environment.finalize(t_1('%.2f', environment.getattr(l_1_f, 'confidence'))))
            yield '): '
            yield escape(environment.finalize(environment.getattr(l_1_f, 'summary')))
            yield '</li>'
        l_1_f = missing
        yield '</ul>\n  </details>\n'
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'alternatives'):
        pass
        yield '  <details class="fold">\n    <summary>Alternatives considered ('
        yield escape(environment.finalize(t_2(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'alternatives'))))
        yield ')</summary>\n    <ul>'
        for l_1_f in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'alternatives'):
            _loop_vars = {}
            pass
            yield '<li><b>'
            yield escape(environment.finalize(environment.getattr(l_1_f, 'cause')))
            yield '</b> ('
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_f, 'category'), 'value')))
            yield ', '
            yield escape(environment.finalize(t_1('%.2f', environment.getattr(l_1_f, 'confidence'))))
            yield '): '
            yield escape(environment.finalize(environment.getattr(l_1_f, 'summary')))
            yield '</li>'
        l_1_f = missing
        yield '</ul>\n  </details>\n'
    if environment.getattr((undefined(name='a') if l_0_a is missing else l_0_a), 'timeline_notes'):
        pass
        yield '  <details class="fold">\n    <summary>How times were placed ('
        yield escape(environment.finalize(t_2(environment.getattr((undefined(name='a') if l_0_a is missing else l_0_a), 'timeline_notes'))))
        yield ' notes)</summary>\n    <ul>'
        for l_1_note in environment.getattr((undefined(name='a') if l_0_a is missing else l_0_a), 'timeline_notes'):
            _loop_vars = {}
            pass
            yield '<li>'
            yield escape(environment.finalize(l_1_note))
            yield '</li>'
        l_1_note = missing
        yield '</ul>\n  </details>\n'
    if environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'trace'):
        pass
        yield '  <details class="fold">\n    <summary>Decision trace ('
        yield escape(environment.finalize(t_2(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'trace'))))
        yield ' lines)</summary>\n    <pre class="trace">'
        for l_1_line in environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'trace')[:400]:
            _loop_vars = {}
            pass
            yield escape(environment.finalize(l_1_line))
            yield '\n'
        l_1_line = missing
        yield '</pre>\n  </details>\n'
    yield '</section>'

blocks = {}
debug_info = '3=28&4=32&5=34&6=36&7=38&10=40&11=42&12=49&14=55&16=58&17=66&23=75&27=78&28=83&33=98&36=101&38=104&39=108&43=112&45=115&46=120&54=137&58=140&59=145&65=161&66=164&71=176&73=179&76=182&78=185&79=187&82=199&84=202&85=204&88=218&90=221&91=223&94=231&96=234&97=236'